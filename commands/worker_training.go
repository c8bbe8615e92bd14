package commands

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/requestid"
)

// The commands in this file are what the API's worker service runs for a
// worker: workers never write events themselves.

// ClaimTraining starts an attempt for one worker. A model that is not queued
// (a duplicate delivery, another worker was first) is a ConflictError.
type ClaimTraining struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Lease    time.Duration
}

// ClaimTrainingHandler runs ClaimTraining.
type ClaimTrainingHandler struct{ *Streams }

func (c ClaimTrainingHandler) Handle(ctx context.Context, cmd ClaimTraining) (ClaimedJob, error) {
	return c.claimTraining(ctx, cmd.WorkerID, "", cmd.ModelID, cmd.Attempt, cmd.Lease)
}

// ClaimNextTraining claims the first of candidates (oldest first) that is
// still claimable for a free worker; compute is where that worker runs.
// A candidate another worker claimed first, or that changed since the read
// model listed it, is skipped. ok is false when none could be claimed.
type ClaimNextTraining struct {
	WorkerID   string
	Compute    string
	Candidates []rewardmodels.TrainingCandidate
	Lease      time.Duration
}

// ClaimNextTrainingHandler runs ClaimNextTraining.
type ClaimNextTrainingHandler struct{ *Streams }

func (c ClaimNextTrainingHandler) Handle(ctx context.Context, cmd ClaimNextTraining) (ClaimedJob, bool, error) {
	for _, cand := range cmd.Candidates {
		j, err := c.claimTraining(ctx, cmd.WorkerID, cmd.Compute, cand.ModelID, cand.Attempt, cmd.Lease)
		var conflict *domain.ConflictError
		var version *domain.VersionConflictError
		var notFound *domain.NotFoundError
		switch {
		case err == nil:
			return j, true, nil
		case errors.As(err, &conflict), errors.As(err, &version), errors.As(err, &notFound):
			continue // taken or changed meanwhile: the next one
		default:
			return ClaimedJob{}, false, err
		}
	}
	return ClaimedJob{}, false, nil
}

// HandBackTraining returns a running attempt to the queue at its worker's
// request (the worker is stopping): another worker trains it from the start.
type HandBackTraining struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Reason   string
}

// HandBackTrainingHandler runs HandBackTraining.
type HandBackTrainingHandler struct{ *Streams }

func (c HandBackTrainingHandler) Handle(ctx context.Context, cmd HandBackTraining) (Result, error) {
	return c.onModel(ctx, cmd.ModelID, WorkerActor(cmd.WorkerID), func(st rewardmodels.State) (string, any, error) {
		p, err := rewardmodels.DecideHandBack(st, cmd.Attempt, cmd.WorkerID, cmd.Reason)
		return events.RewardModelTrainingRequeued, p, err
	})
}

// Heartbeat renews the lease of the worker holding the attempt.
type Heartbeat struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Progress events.Progress
}

// HeartbeatHandler runs Heartbeat.
type HeartbeatHandler struct{ *Streams }

func (c HeartbeatHandler) Handle(ctx context.Context, cmd Heartbeat) (Result, error) {
	return c.onModel(ctx, cmd.ModelID, WorkerActor(cmd.WorkerID), func(st rewardmodels.State) (string, any, error) {
		ev, err := rewardmodels.DecideHeartbeat(st, cmd.Attempt, cmd.WorkerID, cmd.Progress)
		return events.RewardModelHeartbeat, ev, err
	})
}

// CompleteTraining records a succeeded attempt with its scores. A heartbeat
// of the same attempt racing with it makes it decide again (it used to
// answer 409 concurrent_write, which the worker took for a lost lease).
// It is a worker's success report. Scores come as the job's
// scores.jsonl and action_scores.jsonl in the blob store; they are checked
// against the dataset (exact trace and step ids, finite scores, credit in
// [-1, 1]) and published atomically with the success.
type CompleteTraining struct {
	WorkerID, ModelID          string
	Attempt                    int
	Metrics                    json.RawMessage
	RewardStats, ActionStats   json.RawMessage
	ScoresKey, ActionScoresKey string
}

// CompleteTrainingHandler runs CompleteTraining.
type CompleteTrainingHandler struct{ *Streams }

func (c CompleteTrainingHandler) Handle(ctx context.Context, cmd CompleteTraining) (Result, error) {
	return retryOnConflict(func() (Result, error) { return c.completeTraining(ctx, cmd) })
}

// FailTraining is a worker's failure report; msg is the end of its log. A
// heartbeat of the same attempt racing with it makes it decide again.
type FailTraining struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Message  string
}

// FailTrainingHandler runs FailTraining.
type FailTrainingHandler struct{ *Streams }

func (c FailTrainingHandler) Handle(ctx context.Context, cmd FailTraining) (Result, error) {
	return c.onModel(ctx, cmd.ModelID, WorkerActor(cmd.WorkerID), func(st rewardmodels.State) (string, any, error) {
		p, err := rewardmodels.DecideFail(st, cmd.Attempt, cmd.WorkerID, events.FailureWorkerError, cmd.Message)
		return events.RewardModelTrainingFailed, p, err
	})
}

// ExpireLease handles a running model whose worker stopped heartbeating:
// the attempt goes back to the queue (another worker retries it), or fails
// once lease.MaxLostRuns runs were lost. It is safe to call for any
// model: one with a live lease is left alone, and a heartbeat racing with
// it makes it decide again on the new state (the heartbeat may have renewed
// the lease). Requeued says which of the two happened.
type ExpireLease struct {
	ModelID string
	Now     time.Time
}

// ExpireLeaseHandler runs ExpireLease.
type ExpireLeaseHandler struct{ *Streams }

func (c ExpireLeaseHandler) Handle(ctx context.Context, cmd ExpireLease) (Result, error) {
	return c.onModel(ctx, cmd.ModelID, Actor{}, func(st rewardmodels.State) (string, any, error) {
		out, _ := rewardmodels.DecideLeaseExpiry(st, cmd.Now)
		return expiry(events.RewardModelTrainingRequeued, out.Requeue, events.RewardModelTrainingFailed, out.Fail)
	})
}

// ClaimedJob is what a worker needs to train an attempt it claimed (the
// job contract's claim) with the claim's append.
type ClaimedJob struct {
	Result
	jobs.TrainingClaim
}

func (c *Streams) claimTraining(ctx context.Context, workerID, compute, modelID string, attempt int, lease time.Duration) (ClaimedJob, error) {
	st, err := c.loadModel(ctx, "", modelID)
	if err != nil {
		return ClaimedJob{}, err
	}
	p, err := rewardmodels.DecideClaim(st, attempt, workerID, compute, lease)
	if err != nil {
		return ClaimedJob{}, err
	}
	if st.QueuedBy != "" {
		// A claim continues the request that queued the attempt (a pulled
		// claim names none of its own), so one id leads from the request
		// to the worker's reports.
		ctx = requestid.With(ctx, st.QueuedBy)
	}
	r, err := c.appendToModel(ctx, WorkerActor(workerID), st, events.RewardModelTrainingStarted, p)
	if err != nil {
		return ClaimedJob{}, err // a concurrent claim loses at the version check
	}
	return ClaimedJob{Result: r, TrainingClaim: jobs.TrainingClaim{ModelID: st.ID, OwnerID: st.OwnerID, Name: st.Requested.Name, BaseModel: st.Requested.BaseModel,
		DatasetKey: st.Dataset.DatasetKey, ArtifactKey: jobs.ArtifactKey(st.OwnerID, st.ID), Attempt: attempt,
		Epochs: st.Requested.Epochs, LeaseSeconds: p.LeaseSeconds, CorrelationID: st.QueuedBy}}, nil
}

func (c *Streams) completeTraining(ctx context.Context, in CompleteTraining) (Result, error) {
	st, err := c.loadModel(ctx, "", in.ModelID)
	if err != nil {
		return Result{}, err
	}
	p, err := rewardmodels.DecideSucceed(st, in.Attempt, in.WorkerID, in.Metrics, jobs.ArtifactKey(st.OwnerID, st.ID), in.RewardStats, in.ActionStats)
	if err != nil {
		return Result{}, err
	}
	if ok, err := c.store.Blobs().Exists(ctx, p.ArtifactKey); err != nil || !ok {
		return Result{}, domain.Invalid("the checkpoint %s is not in the blob store", p.ArtifactKey)
	}
	ds, err := c.loadDataset(ctx, st.Dataset.DatasetKey)
	if err != nil {
		return Result{}, err
	}
	// The API reads only keys it derives from the job it issued (owner,
	// model, attempt): a worker token must not let its holder make the API
	// read any object in the store.
	scoresKey, actionKey := "", ""
	if in.ScoresKey != "" {
		if scoresKey = jobs.ScoresKey(st.OwnerID, st.ID, in.Attempt); in.ScoresKey != scoresKey {
			return Result{}, domain.InvalidField("scores_key", fmt.Sprintf("scores_key must be %s, the key of this job; the API reads no other", scoresKey))
		}
	}
	if in.ActionScoresKey != "" {
		if actionKey = jobs.ActionScoresKey(st.OwnerID, st.ID, in.Attempt); in.ActionScoresKey != actionKey {
			return Result{}, domain.InvalidField("action_scores_key", fmt.Sprintf("action_scores_key must be %s (or empty), the key of this job; the API reads no other", actionKey))
		}
	}
	traceScores, actionScores, err := c.readScores(ctx, ds, scoresKey, actionKey)
	if err != nil {
		return Result{}, err
	}
	stream := events.ScoresStream(st.ID)
	var extra []events.New
	for batch := range slices.Chunk(traceScores, 2000) {
		extra = append(extra, events.New{ID: newID(), Stream: stream, OwnerID: st.OwnerID, Type: events.TracesScored,
			Payload: events.TracesScoredV1{ModelID: st.ID, ModelName: st.Requested.Name, Scores: batch}})
	}
	for batch := range slices.Chunk(actionScores, 2000) {
		extra = append(extra, events.New{ID: newID(), Stream: stream, OwnerID: st.OwnerID, Type: events.ActionsScored,
			Payload: events.ActionsScoredV1{ModelID: st.ID, ModelName: st.Requested.Name, Scores: batch}})
	}
	return c.appendToModel(ctx, WorkerActor(in.WorkerID), st, events.RewardModelTrainingSucceeded, p, extra...)
}

func (c *Streams) loadDataset(ctx context.Context, key string) (rewardmodels.Dataset, error) {
	var ds rewardmodels.Dataset
	raw, err := c.store.Blobs().Get(ctx, key)
	if err != nil {
		return ds, fmt.Errorf("load dataset %s: %w", key, err)
	}
	return ds, json.Unmarshal(raw, &ds)
}

// readScores reads and validates a job's score files against its dataset.
func (c *Streams) readScores(ctx context.Context, ds rewardmodels.Dataset, scoresKey, actionKey string) ([]events.TraceScore, []events.ActionScore, error) {
	revision := map[string]int{}
	for _, it := range ds.ScoreItems {
		revision[it.TraceID] = it.Revision
	}
	type actionRef struct {
		trace string
		rev   int
	}
	actions := map[string]actionRef{}
	for _, it := range ds.ActionScoreItems {
		actions[it.StepID] = actionRef{it.TraceID, it.Revision}
	}
	var traceScores []events.TraceScore
	if scoresKey != "" {
		err := c.eachJSONL(ctx, scoresKey, len(ds.ScoreItems), func(line int, raw []byte) error {
			var s struct {
				TraceID string  `json:"trace_id"`
				Score   float64 `json:"score"`
			}
			if err := json.Unmarshal(raw, &s); err != nil {
				return err
			}
			rev, ok := revision[s.TraceID]
			if !ok || math.IsNaN(s.Score) || math.IsInf(s.Score, 0) {
				return fmt.Errorf("trace %q is not in the dataset or its score is not finite", s.TraceID)
			}
			traceScores = append(traceScores, events.TraceScore{TraceID: s.TraceID, Revision: rev, Score: s.Score})
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	var actionScores []events.ActionScore
	if actionKey != "" {
		err := c.eachJSONL(ctx, actionKey, len(ds.ActionScoreItems), func(line int, raw []byte) error {
			var s jobs.ActionScore
			if err := json.Unmarshal(raw, &s); err != nil {
				return err
			}
			ref, ok := actions[s.StepID]
			if !ok || ref.trace != s.TraceID {
				return fmt.Errorf("step %q of trace %q is not an action of the dataset", s.StepID, s.TraceID)
			}
			if math.IsNaN(s.Score) || math.IsInf(s.Score, 0) || !(s.Credit >= -1 && s.Credit <= 1) {
				return fmt.Errorf("step %q: score must be finite and credit within [-1, 1]", s.StepID)
			}
			actionScores = append(actionScores, events.ActionScore{TraceID: s.TraceID, StepID: s.StepID, Revision: ref.rev, Score: s.Score, Credit: s.Credit})
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return traceScores, actionScores, nil
}

// eachJSONL streams a worker's score file, bounded: at most one line per
// dataset item (items), no line over jobs.MaxScoreLineBytes and no file
// over jobs.MaxScoreFileBytes(items). A worker cannot make the API buffer
// more than that, whatever it uploads.
func (c *Streams) eachJSONL(ctx context.Context, key string, items int, fn func(line int, raw []byte) error) error {
	rd, err := c.store.Blobs().Reader(ctx, key)
	if err != nil {
		return domain.Invalid("read %s: %v", key, err)
	}
	defer rd.Close()
	limit := jobs.MaxScoreFileBytes(items)
	lr := &io.LimitedReader{R: rd, N: limit + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 64<<10), jobs.MaxScoreLineBytes)
	line, records := 0, 0
	for sc.Scan() {
		line++
		if lr.N <= 0 {
			return domain.Invalid("%s is larger than %d bytes, the most a score file of %d items may be", key, limit, items)
		}
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if records++; records > items {
			return domain.Invalid("%s line %d: more score lines than the %d items of the dataset", key, line, items)
		}
		if err := fn(line, sc.Bytes()); err != nil {
			return domain.Invalid("%s line %d: %v", key, line, err)
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return domain.Invalid("%s line %d: longer than %d bytes", key, line+1, jobs.MaxScoreLineBytes)
	}
	if lr.N <= 0 {
		return domain.Invalid("%s is larger than %d bytes, the most a score file of %d items may be", key, limit, items)
	}
	return sc.Err()
}

var _ = onKind(jobs.KindTrain, (*Streams).trainingJob)

// trainingJob is KindTrain: the claim starts the attempt under a lease, beats
// carry the progress, the result appends training_succeeded with the
// scores the worker wrote (the model's domain decision).
func (c *Streams) trainingJob() jobActions {
	type call[B any] = jobCall[jobs.TrainJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			j, err := ClaimTrainingHandler{c}.Handle(ctx, ClaimTraining{WorkerID: r.Worker, ModelID: r.ID, Attempt: r.Job.Attempt, Lease: r.Lease})
			if err != nil {
				return nil, err
			}
			j.CorrelationID = "" // the message that named the attempt carries it
			return j.TrainingClaim, nil
		}),
		jobs.Beat: onJob(func(ctx context.Context, r call[events.Progress]) (any, error) {
			return jobAck(HeartbeatHandler{c}.Handle(ctx, Heartbeat{WorkerID: r.Worker, ModelID: r.ID, Attempt: r.Job.Attempt, Progress: r.Body}))
		}),
		jobs.Finish: onJob(func(ctx context.Context, r call[jobs.Succeeded]) (any, error) {
			s := r.Body
			if string(s.ActionRewardStats) == "null" {
				s.ActionRewardStats = nil
			}
			return jobAck(CompleteTrainingHandler{c}.Handle(ctx, CompleteTraining{WorkerID: r.Worker, ModelID: r.ID, Attempt: r.Job.Attempt,
				Metrics: s.Metrics, RewardStats: s.RewardStats, ActionStats: s.ActionRewardStats, ScoresKey: s.ScoresKey, ActionScoresKey: s.ActionScoresKey}))
		}),
		jobs.Fail: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(FailTrainingHandler{c}.Handle(ctx, FailTraining{WorkerID: r.Worker, ModelID: r.ID, Attempt: r.Job.Attempt, Message: r.Error}))
		}),
		jobs.HandBack: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(HandBackTrainingHandler{c}.Handle(ctx, HandBackTraining{WorkerID: r.Worker, ModelID: r.ID, Attempt: r.Job.Attempt, Reason: r.Reason}))
		}),
	}
}
