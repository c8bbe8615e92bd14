package usecase

import (
	"context"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/projections/readmodel"
)

// RescoreWithEvaluator is POST /traces/{id}/evaluator/rescore ("Score
// again", spec 002): the live shared-evaluator release scores the trace's
// current revision once more. The answer is the trace's evaluator block
// once the read model has the request: status scoring, the earlier scores
// still listed until the new ones land.
func (b Backend) RescoreWithEvaluator(ctx context.Context, caller *readmodel.Caller, traceID string) (*readmodel.TraceEvaluator, error) {
	res, err := b.Cmds.RescoreWithEvaluator.Handle(ctx, commands.RescoreWithEvaluator{Actor: Actor(caller), TraceID: traceID})
	return traceAfter(ctx, b, caller, traceID, res, err, func(d *readmodel.TraceDetail) *readmodel.TraceEvaluator { return &d.Evaluator })
}
