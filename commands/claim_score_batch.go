package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ClaimScoreBatch starts, for one worker, every run of the batch that is
// still queued under the batch's run id (a run an explicit request
// superseded, or one already claimed alone after a hand-back, is skipped),
// in one append, and answers their items keys; 409 not_claimable when none
// is left (a duplicate delivery).
type ClaimScoreBatch struct {
	WorkerID string
	BatchID  string
	ModelID  string
}

// ClaimScoreBatchHandler runs ClaimScoreBatch.
type ClaimScoreBatchHandler struct{ *Streams }

// Handle runs the command.
func (c ClaimScoreBatchHandler) Handle(ctx context.Context, cmd ClaimScoreBatch) (jobs.ScoreBatchClaim, error) {
	var claim jobs.ScoreBatchClaim
	_, err := retryOnConflict(func() (Result, error) {
		claim = jobs.ScoreBatchClaim{ModelID: cmd.ModelID}
		b, streams, loaded, err := c.loadBatchRuns(ctx, cmd.BatchID, cmd.ModelID)
		if err != nil {
			return Result{}, err
		}
		expected := map[string]int64{}
		var evs []events.New
		for i, r := range b.Runs {
			sc, req, owner, err := foldScoring(loaded[streams[i]])
			if err != nil {
				return Result{}, err
			}
			if sc.RunID != r.RunID || sc.Status != rewardmodels.RunQueued {
				continue
			}
			expected[streams[i]] = sc.Version
			evs = append(evs, events.New{ID: newID(), Stream: streams[i], OwnerID: owner, Type: events.ScoringRunStarted,
				Payload: events.ScoringRunStartedV1{RunID: r.RunID, TraceID: r.TraceID, ModelID: cmd.ModelID, WorkerID: cmd.WorkerID}})
			claim.Runs = append(claim.Runs, jobs.ScoreBatchRun{TraceID: r.TraceID, RunID: r.RunID, ItemsKey: req.ItemsKey})
		}
		if len(evs) == 0 {
			return Result{}, &domain.ConflictError{Code: "not_claimable", Message: "scoring batch " + cmd.BatchID + " has no queued run left"}
		}
		return c.append(ctx, workerActor(cmd.WorkerID), expected, evs)
	})
	return claim, err
}
