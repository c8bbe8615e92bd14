package commands

import (
	"cmp"
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

// ClaimScoring starts a queued run for one worker and returns its items key.
type ClaimScoring struct {
	WorkerID string
	TraceID  string
	ModelID  string
	RunID    string
}

// ClaimScoringHandler runs ClaimScoring.
type ClaimScoringHandler struct{ *Streams }

func (c ClaimScoringHandler) Handle(ctx context.Context, cmd ClaimScoring) (string, error) {
	sc, req, owner, err := c.loadScoring(ctx, cmd.TraceID, cmd.ModelID)
	if err != nil {
		return "", err
	}
	if sc.RunID != cmd.RunID || sc.Status != rewardmodels.RunQueued {
		return "", lease.NotClaimable("scoring run %s is not queued", cmd.RunID)
	}
	_, err = c.appendEvent(ctx, WorkerActor(cmd.WorkerID), events.ScoringStream(cmd.TraceID, cmd.ModelID), owner, sc.Version, events.ScoringRunStarted,
		events.ScoringRunStartedV1{RunID: cmd.RunID, TraceID: cmd.TraceID, ModelID: cmd.ModelID, WorkerID: cmd.WorkerID})
	return req.ItemsKey, err
}

// FinishScoring records a run's outcome. Scores for a trace whose revision
// changed since the request fail the run instead (the trace was re-imported
// or grew while it was scored).
//
// traceScore, when the worker sent one, is the whole trace's raw reward:
// it publishes as the model's trace score in the same append.
type FinishScoring struct {
	WorkerID   string
	TraceID    string
	ModelID    string
	RunID      string
	Scores     []jobs.ActionScore
	TraceScore *float64
	Failure    string
}

// FinishScoringHandler runs FinishScoring.
type FinishScoringHandler struct{ *Streams }

func (c FinishScoringHandler) Handle(ctx context.Context, cmd FinishScoring) (Result, error) {
	sc, req, owner, err := c.loadScoring(ctx, cmd.TraceID, cmd.ModelID)
	if err != nil {
		return Result{}, err
	}
	if err := checkRunHolder(sc, cmd.RunID, cmd.WorkerID); err != nil {
		return Result{}, err
	}
	stream := events.ScoringStream(cmd.TraceID, cmd.ModelID)
	fail := func(msg string) (Result, error) {
		return c.appendEvent(ctx, WorkerActor(cmd.WorkerID), stream, owner, sc.Version, events.ScoringRunFailed,
			events.ScoringRunFailedV1{RunID: cmd.RunID, TraceID: cmd.TraceID, ModelID: cmd.ModelID, Error: msg, Automatic: sc.Automatic})
	}
	if cmd.Failure != "" {
		return fail(cmd.Failure)
	}
	tr, err := c.ownedTrace(ctx, Actor{UserID: owner}, cmd.TraceID)
	if err != nil || tr.Revision != req.TraceRevision {
		return fail("the trace changed while it was being scored (it was re-imported, grew, or was deleted); request scoring again")
	}
	m, err := c.loadModelRequest(ctx, owner, cmd.ModelID)
	if err != nil {
		return Result{}, err
	}
	valid := map[string]bool{}
	for _, it := range scoringItems(tr, m).ActionScoreItems {
		valid[it.StepID] = true
	}
	scores := make([]events.ActionScore, len(cmd.Scores))
	for i, s := range cmd.Scores {
		if !valid[s.StepID] || s.TraceID != cmd.TraceID || !(s.Credit >= -1 && s.Credit <= 1) {
			return Result{}, domain.Invalid("action score %d: step %s is not an action of trace %s or its credit is out of range", i, s.StepID, cmd.TraceID)
		}
		scores[i] = events.ActionScore{TraceID: s.TraceID, StepID: s.StepID, Revision: tr.Revision, Score: s.Score, Credit: s.Credit}
	}
	evs := []events.New{
		{ID: newID(), Stream: stream, OwnerID: owner, Type: events.ScoringRunSucceeded, Payload: events.ScoringRunSucceededV1{RunID: cmd.RunID, TraceID: cmd.TraceID, ModelID: cmd.ModelID, Automatic: sc.Automatic}},
		{ID: newID(), Stream: events.ScoresStream(cmd.ModelID), OwnerID: owner, Type: events.ActionsScored,
			Payload: events.ActionsScoredV1{ModelID: cmd.ModelID, ModelName: m.Requested.Name, RunID: cmd.RunID, Scores: scores}},
	}
	if cmd.TraceScore != nil {
		if math.IsNaN(*cmd.TraceScore) || math.IsInf(*cmd.TraceScore, 0) {
			return Result{}, domain.InvalidField("trace_score", "the trace score must be a finite number")
		}
		evs = append(evs, events.New{ID: newID(), Stream: events.ScoresStream(cmd.ModelID), OwnerID: owner, Type: events.TracesScored,
			Payload: events.TracesScoredV1{ModelID: cmd.ModelID, ModelName: m.Requested.Name,
				Scores: []events.TraceScore{{TraceID: cmd.TraceID, Revision: tr.Revision, Score: *cmd.TraceScore}}}})
	}
	return c.append(ctx, WorkerActor(cmd.WorkerID), map[string]int64{stream: sc.Version}, evs)
}

// HandBackScoring returns the holder's running run to the queue (the worker
// is stopping); the dispatch projection publishes the job again.
type HandBackScoring struct {
	WorkerID string
	TraceID  string
	ModelID  string
	RunID    string
	Reason   string
}

// HandBackScoringHandler runs HandBackScoring.
type HandBackScoringHandler struct{ *Streams }

func (c HandBackScoringHandler) Handle(ctx context.Context, cmd HandBackScoring) (Result, error) {
	sc, _, owner, err := c.loadScoring(ctx, cmd.TraceID, cmd.ModelID)
	if err != nil {
		return Result{}, err
	}
	if err := checkRunHolder(sc, cmd.RunID, cmd.WorkerID); err != nil {
		return Result{}, err
	}
	cmd.Reason = cmp.Or(cmd.Reason, "worker "+cmd.WorkerID+" stopped")
	return c.appendEvent(ctx, WorkerActor(cmd.WorkerID), events.ScoringStream(cmd.TraceID, cmd.ModelID), owner, sc.Version, events.ScoringRunRequeued,
		events.ScoringRunRequeuedV1{RunID: cmd.RunID, TraceID: cmd.TraceID, ModelID: cmd.ModelID, WorkerID: cmd.WorkerID,
			Reason: events.RequeueHandedBack, Detail: tail(cmd.Reason, 500)})
}

// checkRunHolder refuses a report about a scoring run that is not running
// for workerID (another run replaced it, it was requeued or it finished).
func checkRunHolder(sc rewardmodels.ScoringState, runID, workerID string) error {
	if sc.RunID != runID || sc.Status != rewardmodels.RunRunning || sc.WorkerID != workerID {
		return lease.NotClaimable("worker %s does not hold scoring run %s", workerID, runID)
	}
	return nil
}

// ExpireScoringRun handles a run that has been running longer than timeout
// at now (scoring runs have no heartbeat: timeout is their lease): it goes
// back to the queue for the next free worker, and the run whose worker is
// lost for the lease.MaxLostRuns-th time fails with a readable
// reason (first line what happened, then one line per lost run).
type ExpireScoringRun struct {
	TraceID   string
	ModelID   string
	RunID     string
	StartedAt time.Time
	Now       time.Time
	Timeout   time.Duration
}

// ExpireScoringRunHandler runs ExpireScoringRun.
type ExpireScoringRunHandler struct{ *Streams }

func (c ExpireScoringRunHandler) Handle(ctx context.Context, cmd ExpireScoringRun) (Result, error) {
	sc, _, owner, err := c.loadScoring(ctx, cmd.TraceID, cmd.ModelID)
	if err != nil {
		return Result{}, err
	}
	if sc.RunID != cmd.RunID || sc.Status != rewardmodels.RunRunning || cmd.Now.Sub(cmd.StartedAt) < cmd.Timeout {
		return Result{}, nil
	}
	held := sc.Job
	held.Lease, held.LastBeat = cmd.Timeout, cmd.StartedAt
	x, _ := lease.Rules{Silence: "did not finish within %s (started %s)", Job: "scoring failed",
		Lapse: "no result within " + cmd.Timeout.String(), Remedy: "request scoring again once the workers are healthy"}.Expire(held, cmd.Now)
	stream := events.ScoringStream(cmd.TraceID, cmd.ModelID)
	if x.Fail == "" {
		return c.appendEvent(ctx, Actor{}, stream, owner, sc.Version, events.ScoringRunRequeued, events.ScoringRunRequeuedV1{RunID: cmd.RunID,
			TraceID: cmd.TraceID, ModelID: cmd.ModelID, WorkerID: sc.WorkerID, Reason: events.RequeueLeaseExpired, Detail: x.Detail})
	}
	return c.appendEvent(ctx, Actor{}, stream, owner, sc.Version, events.ScoringRunFailed,
		events.ScoringRunFailedV1{RunID: cmd.RunID, TraceID: cmd.TraceID, ModelID: cmd.ModelID, Error: x.Fail, Automatic: sc.Automatic})
}

// scoringRunRequest stores a new run's items (the trace's actions and the
// whole trace, rendered as training renders them) and returns the event
// that requests it; a trace without a scorable action is a validation
// error.
func (c *Streams) scoringRunRequest(ctx context.Context, tr traces.State, m rewardmodels.State, automatic bool, batchID string) (events.New, error) {
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

func (c *Streams) loadScoring(ctx context.Context, traceID, modelID string) (rewardmodels.ScoringState, events.ScoringRunRequestedV1, string, error) {
	evs, err := c.loadStream(ctx, events.ScoringStream(traceID, modelID))
	if err != nil {
		return rewardmodels.ScoringState{}, events.ScoringRunRequestedV1{}, "", err
	}
	return foldScoring(evs)
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

var _ = onKind(jobs.KindScore, (*Streams).scoringJob)

// scoringJob is KindScore: a scoring run of one (trace, model); its result
// appends the action scores. Runs send no heartbeat: the sweep times them.
func (c *Streams) scoringJob() jobActions {
	type call[B any] = jobCall[jobs.ScoreJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			key, err := ClaimScoringHandler{c}.Handle(ctx, ClaimScoring{WorkerID: r.Worker, TraceID: r.Job.TraceID, ModelID: r.Job.ModelID, RunID: r.ID})
			return jobs.ScoringClaim{ItemsKey: key}, err
		}),
		jobs.Finish: onJob(func(ctx context.Context, r call[jobs.ScoringFinished]) (any, error) {
			return jobAck(FinishScoringHandler{c}.Handle(ctx, FinishScoring{WorkerID: r.Worker, TraceID: r.Job.TraceID, ModelID: r.Job.ModelID, RunID: r.ID, Scores: r.Body.ActionScores, TraceScore: r.Body.TraceScore}))
		}),
		jobs.Fail: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(FinishScoringHandler{c}.Handle(ctx, FinishScoring{WorkerID: r.Worker, TraceID: r.Job.TraceID, ModelID: r.Job.ModelID, RunID: r.ID, Failure: cmp.Or(r.Error, noLog)}))
		}),
		jobs.HandBack: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(HandBackScoringHandler{c}.Handle(ctx, HandBackScoring{WorkerID: r.Worker, TraceID: r.Job.TraceID, ModelID: r.Job.ModelID, RunID: r.ID, Reason: r.Reason}))
		}),
	}
}
