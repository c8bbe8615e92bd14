package commands

import (
	"context"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
)

// RollbackResult is a rollback.
type RollbackResult struct {
	Result
	Rollback events.EvaluatorRolledBackV1
}

// RollbackEvaluator is `critic evaluator rollback`: the live release is
// withdrawn and the one live before it serves again (none: traces wait for
// a release again).
type RollbackEvaluator struct {
	By string
}

// RollbackEvaluatorHandler runs RollbackEvaluator.
type RollbackEvaluatorHandler struct{ *Streams }

func (c RollbackEvaluatorHandler) Handle(ctx context.Context, cmd RollbackEvaluator) (RollbackResult, error) {
	var out RollbackResult
	r, err := c.onEvaluator(ctx, Actor{}, func(s evaluator.State) (string, any, error) {
		ev, err := s.DecideRollback(cmd.By)
		out.Rollback = ev
		return events.EvaluatorRolledBack, ev, err
	})
	out.Result = r
	return out, err
}
