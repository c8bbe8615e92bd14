package commands

import (
	"context"

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
func (c *Commands) RollbackEvaluator(ctx context.Context, by string) (RollbackResult, error) {
	var out RollbackResult
	r, err := retryOnConflict(func() (Result, error) {
		s, err := c.EvaluatorState(ctx)
		if err != nil {
			return Result{}, err
		}
		ev, err := s.DecideRollback(by)
		if err != nil {
			return Result{}, err
		}
		out.Rollback = ev
		return c.appendEvaluator(ctx, Actor{}, s, events.EvaluatorRolledBack, ev)
	})
	out.Result = r
	return out, err
}
