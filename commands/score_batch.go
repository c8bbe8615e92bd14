package commands

import (
	"cmp"
	"context"
	"slices"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/jobs/lease"
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
			return Result{}, lease.NotClaimable("scoring batch %s has no queued run left", cmd.BatchID)
		}
		return c.append(ctx, WorkerActor(cmd.WorkerID), expected, evs)
	})
	return claim, err
}

// loadBatch reads a background batch's request; a batch that does not
// exist, or of another model than the job names, is not claimable.
func (c *Streams) loadBatch(ctx context.Context, batchID, modelID string) (events.ScoringBatchRequestedV1, error) {
	evs, err := c.loadStream(ctx, events.ScoringBatchStream(batchID))
	if err != nil {
		return events.ScoringBatchRequestedV1{}, err
	}
	var b events.ScoringBatchRequestedV1
	for _, e := range evs {
		if e.Type == events.ScoringBatchRequested {
			if err := e.DecodeOrFail(&b); err != nil {
				return events.ScoringBatchRequestedV1{}, err
			}
		}
	}
	if b.BatchID == "" || b.ModelID != modelID {
		return events.ScoringBatchRequestedV1{}, lease.NotClaimable("scoring batch %s of model %s does not exist", batchID, modelID)
	}
	return b, nil
}

// loadBatchRuns reads a batch and, in one query, its runs' scoring streams
// (streams[i] is b.Runs[i]'s): what claiming and settling a batch fold.
func (c *Streams) loadBatchRuns(ctx context.Context, batchID, modelID string) (events.ScoringBatchRequestedV1, []string, map[string][]events.Envelope, error) {
	b, err := c.loadBatch(ctx, batchID, modelID)
	if err != nil {
		return b, nil, nil, err
	}
	streams := make([]string, len(b.Runs))
	for i, r := range b.Runs {
		streams[i] = events.ScoringStream(r.TraceID, modelID)
	}
	loaded, err := c.store.LoadStreams(ctx, streams)
	return b, streams, loaded, err
}

// settleBatch ends each run of the batch that workerID still runs:
// end is FinishScoring's failure or HandBackScoring for one run. The runs'
// streams are read in one query: after a batch that went well (every
// trace reported) this is all the worker's finish costs before its next
// claim.
func (c *Streams) settleBatch(ctx context.Context, workerID, batchID, modelID string, end func(traceID, runID string) (Result, error)) (Result, error) {
	b, streams, loaded, err := c.loadBatchRuns(ctx, batchID, modelID)
	if err != nil {
		return Result{}, err
	}
	var last Result
	for i, r := range b.Runs {
		sc, _, _, err := foldScoring(loaded[streams[i]])
		if err != nil {
			return Result{}, err
		}
		if sc.RunID != r.RunID || sc.Status != rewardmodels.RunRunning || sc.WorkerID != workerID {
			continue
		}
		res, err := end(r.TraceID, r.RunID)
		if err != nil {
			return Result{}, err
		}
		last = res
	}
	return last, nil
}

var _ = onKind(jobs.KindScoreBatch, (*Streams).scoreBatchJob)

// scoreBatchJob is KindScoreBatch: background scoring's batch. Each trace's
// result is a report (its scores publish at once, or that trace's run
// fails — an automatic attempt); finish fails the runs the worker gave no
// result for; fail and hand-back end or requeue the worker's running runs
// (a requeued run is published alone as a score job). Like single runs,
// batches send no heartbeat: the sweep times each run from its start.
func (c *Streams) scoreBatchJob() jobActions {
	type call[B any] = jobCall[jobs.ScoreBatchJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return ClaimScoreBatchHandler{c}.Handle(ctx, ClaimScoreBatch{WorkerID: r.Worker, BatchID: r.ID, ModelID: r.Job.ModelID})
		}),
		jobs.Report: onJob(func(ctx context.Context, r call[jobs.ScoreBatchReport]) (any, error) {
			b, err := c.loadBatch(ctx, r.ID, r.Job.ModelID)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(b.Runs, events.ScoringBatchRun{TraceID: r.Body.TraceID, RunID: r.Body.RunID}) {
				return nil, domain.InvalidField("body.run_id", "run "+r.Body.RunID+" of trace "+r.Body.TraceID+" is not in scoring batch "+r.ID)
			}
			// A trace's error fails its run (FinishScoring reads no scores then).
			return jobAck(FinishScoringHandler{c}.Handle(ctx, FinishScoring{WorkerID: r.Worker, TraceID: r.Body.TraceID, ModelID: r.Job.ModelID, RunID: r.Body.RunID,
				Scores: r.Body.ActionScores, TraceScore: r.Body.TraceScore, Failure: tail(r.Body.Error, 2000)}))
		}),
		jobs.Finish: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(c.settleBatch(ctx, r.Worker, r.ID, r.Job.ModelID, func(traceID, runID string) (Result, error) {
				return FinishScoringHandler{c}.Handle(ctx, FinishScoring{WorkerID: r.Worker, TraceID: traceID, ModelID: r.Job.ModelID, RunID: runID, Failure: "no result for this trace: the worker finished its batch without scoring it"})
			}))
		}),
		jobs.Fail: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			msg := cmp.Or(r.Error, noLog)
			return jobAck(c.settleBatch(ctx, r.Worker, r.ID, r.Job.ModelID, func(traceID, runID string) (Result, error) {
				return FinishScoringHandler{c}.Handle(ctx, FinishScoring{WorkerID: r.Worker, TraceID: traceID, ModelID: r.Job.ModelID, RunID: runID, Failure: msg})
			}))
		}),
		jobs.HandBack: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(c.settleBatch(ctx, r.Worker, r.ID, r.Job.ModelID, func(traceID, runID string) (Result, error) {
				return HandBackScoringHandler{c}.Handle(ctx, HandBackScoring{WorkerID: r.Worker, TraceID: traceID, ModelID: r.Job.ModelID, RunID: runID, Reason: r.Reason})
			}))
		}),
	}
}

// loadModelRequest is a model's state from its request and its last
// training success alone (its id, owner, name, input version and artifact
// — what a scoring result is checked and published with, none of which
// changes once the model is ready; its status is not folded): FinishScoring
// runs once per scored trace, and folding the whole model stream
// (training's heartbeats included) each time was a tenth of the API's CPU
// under background scoring.
func (c *Streams) loadModelRequest(ctx context.Context, ownerID, modelID string) (rewardmodels.State, error) {
	loaded, err := c.store.LoadStreamTypes(ctx, events.RewardModelStream(modelID), []string{events.RewardModelRequested, events.RewardModelTrainingSucceeded})
	if err != nil {
		return rewardmodels.State{}, err
	}
	var st rewardmodels.State
	for _, e := range loaded {
		if e.Type == events.RewardModelRequested {
			if st, err = rewardmodels.Fold([]events.Envelope{e}); err != nil {
				return rewardmodels.State{}, err
			}
			continue
		}
		var ok events.RewardModelTrainingSucceededV1
		if err := e.DecodeOrFail(&ok); err != nil {
			return rewardmodels.State{}, err
		}
		st.Success = &ok
	}
	if st.Success == nil {
		st.Success = &events.RewardModelTrainingSucceededV1{}
	}
	if st.ID == "" || (ownerID != "" && st.OwnerID != ownerID) {
		return rewardmodels.State{}, domain.NotFound("reward model", modelID)
	}
	return st, nil
}
