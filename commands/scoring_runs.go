package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/jobs/lease"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// RequestScoringResult names the run that answers the request: a new one, the
// active one (concurrent requests reuse it), or the completed one for the
// same trace revision and checkpoint.
type RequestScoringResult struct {
	Result
	RunID string
}

// RequestScoring is POST /traces/{id}/score.
func (c *Commands) RequestScoring(ctx context.Context, actor Actor, traceID, modelID string) (RequestScoringResult, error) {
	m, err := c.loadModel(ctx, actor.UserID, modelID)
	if err != nil {
		return RequestScoringResult{}, err
	}
	var res RequestScoringResult
	r, err := retryOnConflict(func() (Result, error) {
		tr, err := c.ownedTrace(ctx, actor, traceID)
		if err != nil {
			return Result{}, err
		}
		if err := rewardmodels.CheckScorable(m); err != nil {
			return Result{}, err
		}
		stream := events.ScoringStream(traceID, modelID)
		loaded, err := c.store.LoadStreams(ctx, []string{stream})
		if err != nil {
			return Result{}, err
		}
		var sc rewardmodels.ScoringState
		for _, e := range loaded[stream] {
			if err := sc.Apply(e); err != nil {
				return Result{}, err
			}
		}
		if rewardmodels.DecideScoring(sc, tr.Revision, false) == rewardmodels.ReuseRun {
			res.RunID = sc.RunID
			return Result{}, nil
		}
		ev, err := c.scoringRunRequest(ctx, tr, m, false, "")
		if err != nil {
			return Result{}, err
		}
		res.RunID = ev.Payload.(events.ScoringRunRequestedV1).RunID
		return c.append(ctx, actor, map[string]int64{stream: sc.Version}, []events.New{ev})
	})
	res.Result = r
	return res, err
}

// scoringRunRequest stores a new run's items (the trace's actions and the
// whole trace, rendered as training renders them) and returns the event
// that requests it; a trace without a scorable action is a validation
// error.
func (c *Commands) scoringRunRequest(ctx context.Context, tr traces.State, m rewardmodels.State, automatic bool, batchID string) (events.New, error) {
	items := scoringItems(tr, m)
	if len(items.ActionScoreItems) == 0 {
		return events.New{}, &domain.ValidationError{Code: "no_actions", Field: "trace_id", Message: "the trace has no assistant responses or tool calls to score"}
	}
	runID := newID()
	items.RunID = runID
	raw, _ := json.Marshal(items)
	key := fmt.Sprintf("scoring/%s/%s.json", m.OwnerID, runID)
	if err := c.store.Blobs().Put(ctx, key, raw); err != nil {
		return events.New{}, err
	}
	return events.New{ID: newID(), Stream: events.ScoringStream(tr.ID, m.ID), OwnerID: m.OwnerID,
		Type: events.ScoringRunRequested, Payload: events.ScoringRunRequestedV1{RunID: runID, TraceID: tr.ID, ModelID: m.ID,
			TraceRevision: tr.Revision, ItemsKey: key, Automatic: automatic, BatchID: batchID}}, nil
}

func scoringItems(tr traces.State, m rewardmodels.State) jobs.ScoringItems {
	pt := rewardmodels.PairTrace(tr)
	// Training and scoring render alike. Thinking steps are never scored,
	// whatever rules the model's dataset was built under: a score on
	// reasoning would show as an action's credit and queue it for review.
	v := m.Config.InputVersion
	items := jobs.ScoringItems{ModelID: m.ID, ArtifactKey: m.Success.ArtifactKey,
		Trace: rewardmodels.ScoreItem{TraceID: tr.ID, Revision: tr.Revision, Text: domain.RenderVersion(v, pt.Steps, len(pt.Steps)-1, true)}}
	if v == 3 {
		items.MaxLength = rewardmodels.InputV3MaxLength
	}
	for i, st := range pt.Steps {
		if rewardmodels.IsScorableAction(st) {
			items.ActionScoreItems = append(items.ActionScoreItems, rewardmodels.ActionItem{TraceID: tr.ID, StepID: st.ID, Revision: tr.Revision, Text: domain.RenderVersion(v, pt.Steps, i, false)})
		}
	}
	return items
}

func (c *Commands) loadScoring(ctx context.Context, traceID, modelID string) (rewardmodels.ScoringState, events.ScoringRunRequestedV1, string, error) {
	stream := events.ScoringStream(traceID, modelID)
	loaded, err := c.store.LoadStreams(ctx, []string{stream})
	if err != nil {
		return rewardmodels.ScoringState{}, events.ScoringRunRequestedV1{}, "", err
	}
	return foldScoring(loaded[stream])
}

// foldScoring folds one (trace, model) scoring stream: its state, the
// current run's request and the stream's owner.
func foldScoring(stream []events.Envelope) (rewardmodels.ScoringState, events.ScoringRunRequestedV1, string, error) {
	var sc rewardmodels.ScoringState
	var req events.ScoringRunRequestedV1
	owner := ""
	for _, e := range stream {
		if err := sc.Apply(e); err != nil {
			return rewardmodels.ScoringState{}, events.ScoringRunRequestedV1{}, "", err
		}
		owner = e.OwnerID
		if e.Type == events.ScoringRunRequested {
			if err := e.DecodeOrFail(&req); err != nil {
				return rewardmodels.ScoringState{}, events.ScoringRunRequestedV1{}, "", err
			}
		}
	}
	return sc, req, owner, nil
}

// ClaimScoring starts a queued run for one worker and returns its items key.
func (c *Commands) ClaimScoring(ctx context.Context, workerID, traceID, modelID, runID string) (string, error) {
	sc, req, owner, err := c.loadScoring(ctx, traceID, modelID)
	if err != nil {
		return "", err
	}
	if sc.RunID != runID || sc.Status != rewardmodels.RunQueued {
		return "", &domain.ConflictError{Code: "not_claimable", Message: "scoring run " + runID + " is not queued"}
	}
	_, err = c.append(ctx, workerActor(workerID), map[string]int64{events.ScoringStream(traceID, modelID): sc.Version}, []events.New{{
		ID: newID(), Stream: events.ScoringStream(traceID, modelID), OwnerID: owner, Type: events.ScoringRunStarted,
		Payload: events.ScoringRunStartedV1{RunID: runID, TraceID: traceID, ModelID: modelID, WorkerID: workerID}}})
	return req.ItemsKey, err
}

// FinishScoring records a run's outcome. Scores for a trace whose revision
// changed since the request fail the run instead (the trace was re-imported
// or grew while it was scored).
//
// traceScore, when the worker sent one, is the whole trace's raw reward:
// it publishes as the model's trace score in the same append.
func (c *Commands) FinishScoring(ctx context.Context, workerID, traceID, modelID, runID string, scores []events.ActionScore, traceScore *float64, failure string) (Result, error) {
	sc, req, owner, err := c.loadScoring(ctx, traceID, modelID)
	if err != nil {
		return Result{}, err
	}
	if sc.RunID != runID || sc.Status != rewardmodels.RunRunning || sc.WorkerID != workerID {
		return Result{}, &domain.ConflictError{Code: "not_claimable", Message: "worker " + workerID + " does not hold scoring run " + runID}
	}
	stream := events.ScoringStream(traceID, modelID)
	fail := func(msg string) (Result, error) {
		return c.append(ctx, workerActor(workerID), map[string]int64{stream: sc.Version}, []events.New{{ID: newID(), Stream: stream, OwnerID: owner,
			Type: events.ScoringRunFailed, Payload: events.ScoringRunFailedV1{RunID: runID, TraceID: traceID, ModelID: modelID, Error: msg, Automatic: sc.Automatic}}})
	}
	if failure != "" {
		return fail(failure)
	}
	tr, err := c.ownedTrace(ctx, Actor{UserID: owner}, traceID)
	if err != nil || tr.Revision != req.TraceRevision {
		return fail("the trace changed while it was being scored (it was re-imported, grew, or was deleted); request scoring again")
	}
	m, err := c.loadModelRequest(ctx, owner, modelID)
	if err != nil {
		return Result{}, err
	}
	valid := map[string]bool{}
	for _, it := range scoringItems(tr, m).ActionScoreItems {
		valid[it.StepID] = true
	}
	for i := range scores {
		if !valid[scores[i].StepID] || scores[i].TraceID != traceID || !(scores[i].Credit >= -1 && scores[i].Credit <= 1) {
			return Result{}, domain.Invalid("action score %d: step %s is not an action of trace %s or its credit is out of range", i, scores[i].StepID, traceID)
		}
		scores[i].Revision = tr.Revision
	}
	evs := []events.New{
		{ID: newID(), Stream: stream, OwnerID: owner, Type: events.ScoringRunSucceeded, Payload: events.ScoringRunSucceededV1{RunID: runID, TraceID: traceID, ModelID: modelID, Automatic: sc.Automatic}},
		{ID: newID(), Stream: events.ScoresStream(modelID), OwnerID: owner, Type: events.ActionsScored,
			Payload: events.ActionsScoredV1{ModelID: modelID, ModelName: m.Requested.Name, RunID: runID, Scores: scores}},
	}
	if traceScore != nil {
		if math.IsNaN(*traceScore) || math.IsInf(*traceScore, 0) {
			return Result{}, &domain.ValidationError{Code: "invalid_request", Field: "trace_score", Message: "the trace score must be a finite number"}
		}
		evs = append(evs, events.New{ID: newID(), Stream: events.ScoresStream(modelID), OwnerID: owner, Type: events.TracesScored,
			Payload: events.TracesScoredV1{ModelID: modelID, ModelName: m.Requested.Name,
				Scores: []events.TraceScore{{TraceID: traceID, Revision: tr.Revision, Score: *traceScore}}}})
	}
	return c.append(ctx, workerActor(workerID), map[string]int64{stream: sc.Version}, evs)
}

// HandBackScoring returns the holder's running run to the queue (the worker
// is stopping); the dispatch projection publishes the job again.
func (c *Commands) HandBackScoring(ctx context.Context, workerID, traceID, modelID, runID, reason string) (Result, error) {
	sc, _, owner, err := c.loadScoring(ctx, traceID, modelID)
	if err != nil {
		return Result{}, err
	}
	if sc.RunID != runID || sc.Status != rewardmodels.RunRunning || sc.WorkerID != workerID {
		return Result{}, &domain.ConflictError{Code: "not_claimable", Message: "worker " + workerID + " does not hold scoring run " + runID}
	}
	if reason == "" {
		reason = "worker " + workerID + " stopped"
	}
	stream := events.ScoringStream(traceID, modelID)
	return c.append(ctx, workerActor(workerID), map[string]int64{stream: sc.Version}, []events.New{{ID: newID(), Stream: stream, OwnerID: owner,
		Type: events.ScoringRunRequeued, Payload: events.ScoringRunRequeuedV1{RunID: runID, TraceID: traceID, ModelID: modelID, WorkerID: workerID,
			Reason: events.RequeueHandedBack, Detail: tail(reason, 500)}}})
}

// ExpireScoringRun handles a run that has been running longer than timeout
// at now (scoring runs have no heartbeat: timeout is their lease): it goes
// back to the queue for the next free worker, and the run whose worker is
// lost for the lease.MaxLostRuns-th time fails with a readable
// reason (first line what happened, then one line per lost run).
func (c *Commands) ExpireScoringRun(ctx context.Context, traceID, modelID, runID string, startedAt, now time.Time, timeout time.Duration) (Result, error) {
	sc, _, owner, err := c.loadScoring(ctx, traceID, modelID)
	if err != nil {
		return Result{}, err
	}
	if sc.RunID != runID || sc.Status != rewardmodels.RunRunning || now.Sub(startedAt) < timeout {
		return Result{}, nil
	}
	held := sc.Job
	held.Lease, held.LastBeat = timeout, startedAt
	x, _ := lease.Rules{Silence: "did not finish within %s (started %s)", Job: "scoring failed",
		Lapse: "no result within " + timeout.String(), Remedy: "request scoring again once the workers are healthy"}.Expire(held, now)
	stream := events.ScoringStream(traceID, modelID)
	if x.Fail == "" {
		return c.append(ctx, Actor{}, map[string]int64{stream: sc.Version}, []events.New{{ID: newID(), Stream: stream, OwnerID: owner,
			Type: events.ScoringRunRequeued, Payload: events.ScoringRunRequeuedV1{RunID: runID, TraceID: traceID, ModelID: modelID,
				WorkerID: sc.WorkerID, Reason: events.RequeueLeaseExpired, Detail: x.Detail}}})
	}
	return c.append(ctx, Actor{}, map[string]int64{stream: sc.Version}, []events.New{{ID: newID(), Stream: stream, OwnerID: owner,
		Type: events.ScoringRunFailed, Payload: events.ScoringRunFailedV1{RunID: runID, TraceID: traceID, ModelID: modelID, Error: x.Fail, Automatic: sc.Automatic}}})
}

var _ = onKind(jobs.KindScore, (*Commands).scoringJob)

// scoringJob is KindScore: a scoring run of one (trace, model); its result
// appends the action scores. Runs send no heartbeat: the sweep times them.
func (c *Commands) scoringJob() jobActions {
	type call[B any] = jobCall[jobs.ScoreJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			key, err := c.ClaimScoring(ctx, r.Worker, r.Job.TraceID, r.Job.ModelID, r.ID)
			return jobs.ScoringClaim{ItemsKey: key}, err
		}),
		jobs.Finish: onJob(func(ctx context.Context, r call[jobs.ScoringFinished]) (any, error) {
			scores := make([]events.ActionScore, len(r.Body.ActionScores))
			for i, s := range r.Body.ActionScores {
				scores[i] = events.ActionScore{TraceID: s.TraceID, StepID: s.StepID, Score: s.Score, Credit: s.Credit}
			}
			return jobAck(c.FinishScoring(ctx, r.Worker, r.Job.TraceID, r.Job.ModelID, r.ID, scores, r.Body.TraceScore, ""))
		}),
		jobs.Fail: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			msg := r.Error
			if msg == "" {
				msg = "the worker reported a failure without a log"
			}
			return jobAck(c.FinishScoring(ctx, r.Worker, r.Job.TraceID, r.Job.ModelID, r.ID, nil, nil, msg))
		}),
		jobs.HandBack: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(c.HandBackScoring(ctx, r.Worker, r.Job.TraceID, r.Job.ModelID, r.ID, r.Reason))
		}),
	}
}
