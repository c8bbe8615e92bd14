package commands

import (
	"context"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/jobs"
)

// ClaimEvaluatorScoring hands a worker the live release's checkpoint and
// the trace's actions as the evaluator reads them (system instructions,
// metadata.evaluation_context, prior context). Nothing is appended: the
// report decides, and a second report of the same revision and release is
// refused.
type ClaimEvaluatorScoring struct {
	TraceID string
}

// ClaimEvaluatorScoringHandler runs ClaimEvaluatorScoring.
type ClaimEvaluatorScoringHandler struct{ *Streams }

// Handle runs the command.
func (c ClaimEvaluatorScoringHandler) Handle(ctx context.Context, cmd ClaimEvaluatorScoring) (jobs.EvaluatorScoringClaim, error) {
	t, live, err := c.scoringTarget(ctx, cmd.TraceID)
	if err != nil {
		return jobs.EvaluatorScoringClaim{}, err
	}
	out := jobs.EvaluatorScoringClaim{TraceID: cmd.TraceID, TraceRevision: t.Revision, Release: live.Release, ArtifactKey: live.ArtifactKey,
		Inputs: []jobs.EvaluatorActionInput{}}
	for _, in := range evaluator.ActionInputs(t.State) {
		out.Inputs = append(out.Inputs, jobs.EvaluatorActionInput{StepID: in.StepID, Text: in.Text})
	}
	return out, nil
}
