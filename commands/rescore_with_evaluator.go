package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// RescoreWithEvaluator is "Score again" on a trace (spec 002): the owner asks
// the live shared-evaluator release to score the trace's current revision
// once more — a fresh run of the saved checkpoint, with no labeling call and
// no training. It appends evaluator.trace_rescore_requested, which lets one
// more scoring of that revision and release be claimed (loadEvaluatorTrace)
// and which the dispatch projection turns into a scoring job; the scores
// already shown stay until the new ones land. Refused while no release is
// live, since nothing could score it.
type RescoreWithEvaluator struct {
	Actor   Actor
	TraceID string
}

// RescoreWithEvaluatorHandler runs RescoreWithEvaluator.
type RescoreWithEvaluatorHandler struct{ *Streams }

func (c RescoreWithEvaluatorHandler) Handle(ctx context.Context, cmd RescoreWithEvaluator) (Result, error) {
	return c.onTrace(ctx, cmd.Actor, cmd.TraceID, func(st traces.State) (string, any, error) {
		live, err := c.liveRelease(ctx)
		if err != nil {
			return "", nil, err
		}
		if live == nil {
			return "", nil, &domain.ConflictError{Code: "no_live_release",
				Message: "no shared evaluator release is live, so nothing can score the trace again; traces are scored once the first release ships"}
		}
		return events.EvaluatorTraceRescoreRequested,
			events.EvaluatorTraceRescoreRequestedV1{TraceID: cmd.TraceID, TraceRevision: st.Revision, Release: live.Release}, nil
	})
}
