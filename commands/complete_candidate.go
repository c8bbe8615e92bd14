package commands

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// CompleteCandidate is a worker's success report: the margins must cover
// the candidate's benchmark exactly (and the incumbent's when there is
// one), and the checkpoint must be in the blob store at the key the API
// chose.
type CompleteCandidate struct {
	WorkerID string
	ID       string
	Result   jobs.EvaluatorCandidateSucceeded
}

// CompleteCandidateHandler runs CompleteCandidate.
type CompleteCandidateHandler struct{ *Streams }

// Handle runs the command.
func (c CompleteCandidateHandler) Handle(ctx context.Context, cmd CompleteCandidate) (Result, error) {
	in := cmd.Result
	return retryOnConflict(func() (Result, error) {
		s, err := c.EvaluatorState(ctx)
		if err != nil {
			return Result{}, err
		}
		cand, err := s.DecideReport(cmd.ID, cmd.WorkerID)
		if err != nil {
			return Result{}, err
		}
		b := s.Benchmark(cand.BenchmarkVersion)
		if b == nil {
			return Result{}, fmt.Errorf("candidate %s names benchmark version %d, which the stream does not hold", cmd.ID, cand.BenchmarkVersion)
		}
		if err := evaluator.CheckMargins(b, cand, in.CandidateMargins, in.IncumbentMargins); err != nil {
			return Result{}, err
		}
		if len(in.Metrics) == 0 || !json.Valid(in.Metrics) {
			return Result{}, domain.Invalid("metrics must be a JSON object")
		}
		if len(in.ActionRewardStats) == 0 || string(in.ActionRewardStats) == "null" || !json.Valid(in.ActionRewardStats) {
			return Result{}, domain.Invalid("action_reward_stats is required: the evaluator scores actions, and credit needs the training statistics")
		}
		if ok, err := c.store.Blobs().Exists(ctx, cand.ArtifactKey); err != nil {
			return Result{}, err
		} else if !ok {
			return Result{}, domain.Invalid("no checkpoint at %s: upload it before reporting success", cand.ArtifactKey)
		}
		inc := in.IncumbentMargins
		if inc == nil {
			inc = map[string]float64{}
		}
		return c.appendEvaluator(ctx, workerActor(cmd.WorkerID), s, events.EvaluatorCandidateTrained, events.EvaluatorCandidateTrainedV1{
			CandidateID: cmd.ID, WorkerID: cmd.WorkerID, ArtifactKey: cand.ArtifactKey, Metrics: in.Metrics, ActionRewardStats: in.ActionRewardStats,
			CandidateMargins: in.CandidateMargins, IncumbentMargins: inc})
	})
}
