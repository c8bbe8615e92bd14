package commands

import (
	"context"
	"math"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// RecordEvaluatorScores is a worker's scoring report: one finite score
// per scorable action of the revision, each credit within [−1, 1].
type RecordEvaluatorScores struct {
	TraceID string
	Scores  jobs.EvaluatorScored
}

// RecordEvaluatorScoresHandler runs RecordEvaluatorScores.
type RecordEvaluatorScoresHandler struct{ *Streams }

// Handle runs the command.
func (c RecordEvaluatorScoresHandler) Handle(ctx context.Context, cmd RecordEvaluatorScores) (Result, error) {
	in := cmd.Scores
	return retryOnConflict(func() (Result, error) {
		t, live, err := c.scoringTarget(ctx, cmd.TraceID)
		if err != nil {
			return Result{}, err
		}
		if err := checkReport(t, live, in.EvaluatorScoringRequest); err != nil {
			return Result{}, err
		}
		want := evaluator.ActionInputs(t.State)
		if len(in.Scores) != len(want) {
			return Result{}, domain.Invalid("%d scores for %d actions", len(in.Scores), len(want))
		}
		scores := make([]events.EvaluatorActionScore, len(want))
		for i, a := range want {
			sc := in.Scores[i]
			switch {
			case sc.StepID != a.StepID:
				return Result{}, domain.Invalid("score %d is for step %q; the action there is step %s", i, sc.StepID, a.StepID)
			case math.IsNaN(sc.Score) || math.IsInf(sc.Score, 0):
				return Result{}, domain.Invalid("step %s: the score is not a finite number", sc.StepID)
			case !(sc.Credit >= -1 && sc.Credit <= 1):
				return Result{}, domain.Invalid("step %s: credit %v is outside [-1, 1]", sc.StepID, sc.Credit)
			}
			scores[i] = events.EvaluatorActionScore{StepID: sc.StepID, Score: sc.Score, Credit: sc.Credit}
		}
		return c.appendToTrace(ctx, workerActor(in.WorkerID), t.State, events.EvaluatorTraceScored,
			events.EvaluatorTraceScoredV1{TraceID: cmd.TraceID, TraceRevision: t.Revision, Release: live.Release, WorkerID: in.WorkerID, Scores: scores})
	})
}
