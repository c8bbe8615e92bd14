package commands

import (
	"context"
	"strings"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// FailEvaluatorScoring records a failed scoring job with the end of the
// worker's log; the trace then says so until a later revision or release
// scores it.
type FailEvaluatorScoring struct {
	TraceID string
	Failure jobs.EvaluatorScoringFailed
}

// FailEvaluatorScoringHandler runs FailEvaluatorScoring.
type FailEvaluatorScoringHandler struct{ *Streams }

// Handle runs the command.
func (c FailEvaluatorScoringHandler) Handle(ctx context.Context, cmd FailEvaluatorScoring) (Result, error) {
	in := cmd.Failure
	msg := strings.TrimSpace(in.Error)
	if msg == "" {
		msg = "the worker reported a failure without a log"
	}
	if r := []rune(msg); len(r) > 2000 {
		msg = string(r[len(r)-2000:])
	}
	return retryOnConflict(func() (Result, error) {
		t, live, err := c.scoringTarget(ctx, cmd.TraceID)
		if err != nil {
			return Result{}, err
		}
		if err := checkReport(t, live, in.EvaluatorScoringRequest); err != nil {
			return Result{}, err
		}
		return c.appendToTrace(ctx, workerActor(in.WorkerID), t.State, events.EvaluatorTraceScoringFailed,
			events.EvaluatorTraceScoringFailedV1{TraceID: cmd.TraceID, TraceRevision: t.Revision, Release: live.Release, WorkerID: in.WorkerID, Error: msg})
	})
}
