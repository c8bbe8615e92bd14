// Package rewardmodels is the reward-model aggregate: a training request and
// its attempts, from queued through a worker's claim and lease to success or
// failure. Every transition is decided here from the model's own stream.
package rewardmodels

import (
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs/lease"
)

// Statuses a user sees.
const (
	StatusQueued    = lease.Queued
	StatusRunning   = lease.Running
	StatusSucceeded = lease.Succeeded
	StatusFailed    = lease.Failed
)

// Request defaults (spec 001 "Job directory contract").
const (
	DefaultBaseModel = "Qwen/Qwen3-0.6B"
	DefaultEpochs    = 1
	// Compute is fixed by the deployment, never chosen by clients.
	Compute = "local"
)

// State is a reward model as its stream describes it.
type State struct {
	ID        string
	OwnerID   string
	Version   int64
	Requested events.RewardModelRequestedV1
	Attempt   int
	Dataset   *events.RewardModelDatasetBuiltV1 // of the current attempt
	// Job is the current attempt's training lease; its Lost are the
	// attempt's runs whose lease expired (training's or feedback
	// extraction's: either way a worker died holding the attempt), after
	// lease.MaxLostRuns of which the attempt fails.
	lease.Job
	Success *events.RewardModelTrainingSucceededV1
	Error   string // of the last failure
	// QueuedBy is the correlation id of the event that queued the current
	// attempt (the request, or the retry): a worker pulling the attempt
	// keeps it, so one id leads from the request to the worker's reports.
	QueuedBy string

	// Config is the request's training_config with defaults applied.
	Config events.TrainingConfig
	// Plan says whether the current attempt extracts feedback.
	Plan events.FeedbackPlan
	// Extraction is the current attempt's extraction, once claimed.
	Extraction *Extraction
	// Extracted are the current attempt's feedback records, in the order
	// they were recorded.
	Extracted []events.RewardModelFeedbackExtractedV1
	// Recorded are every attempt's feedback records with their event ids:
	// what a retry may reuse.
	Recorded []RecordedFeedback
	// ScoringPaused: the owner paused background scoring (spec 001
	// "Learned action credit"); explicit scoring still runs.
	ScoringPaused bool

	// What the model's page shows beyond the lease (one fold for the
	// command side and the answer to a write, readmodel.ModelAsOf):
	// CreatedAt is the request's time; StartedAt and FinishedAt the current
	// attempt's claim and end; Compute where it runs (the request's, then
	// the claiming worker's); NumPairs the dataset's or the result's pair
	// count; Progress the latest heartbeat's (nil: none).
	CreatedAt             time.Time
	StartedAt, FinishedAt *time.Time
	Compute               string
	NumPairs              *int
	Progress              json.RawMessage
	// pending are finding events not yet closed by their record.
	pending []events.RewardModelFindingRecordedV1
}

// Apply folds one event of the model's stream into the state.
func (s *State) Apply(e events.Envelope) error {
	s.Version, s.OwnerID = e.Version, e.OwnerID
	switch e.Type {
	case events.RewardModelRequested:
		if err := e.DecodeOrFail(&s.Requested); err != nil {
			return err
		}
		s.ID, s.Attempt, s.QueuedBy = s.Requested.ModelID, 1, e.CorrelationID
		s.CreatedAt, s.Compute = e.RecordedAt.UTC(), s.Requested.Compute
		s.Queue()
		s.Config = ConfigOf(s.Requested)
		if s.Requested.FeedbackPlan != nil {
			s.Plan = *s.Requested.FeedbackPlan
		}
	case events.RewardModelDatasetBuilt:
		var p events.RewardModelDatasetBuiltV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if p.Attempt == s.Attempt {
			s.Dataset = &p
		}
		s.NumPairs = new(p.NumPairs)
	case events.RewardModelTrainingStarted:
		var p events.RewardModelTrainingStartedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Claimed(p.WorkerID, p.LeaseSeconds, e.RecordedAt)
		t := e.RecordedAt.UTC()
		s.StartedAt, s.Progress = &t, nil
		s.Compute = cmp.Or(p.Compute, s.Compute)
	case events.RewardModelHeartbeat:
		s.Beat(e.RecordedAt)
		var p events.RewardModelHeartbeatV1
		if e.Decode(&p) == nil {
			if b, err := json.Marshal(p.Progress); err == nil {
				s.Progress = b
			}
		}
	case events.RewardModelTrainingSucceeded:
		var p events.RewardModelTrainingSucceededV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		t, n := e.RecordedAt.UTC(), p.NumPairs
		s.Status, s.Success, s.FinishedAt, s.NumPairs, s.Progress = StatusSucceeded, &p, &t, &n, nil
	case events.RewardModelTrainingFailed:
		var p events.RewardModelTrainingFailedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		t := e.RecordedAt.UTC()
		s.Status, s.Error, s.FinishedAt = StatusFailed, p.Error, &t
	case events.RewardModelTrainingRequeued:
		var p events.RewardModelTrainingRequeuedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Requeued(p.Reason, p.Detail)
		s.StartedAt, s.Progress = nil, nil
	case events.RewardModelRetried:
		var p events.RewardModelRetriedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Queue()
		s.Attempt, s.Dataset, s.QueuedBy = p.Attempt, nil, e.CorrelationID
		s.NumPairs, s.StartedAt, s.FinishedAt, s.Progress = nil, nil, nil, nil
		s.Extraction, s.Extracted, s.Plan = nil, nil, events.FeedbackPlan{}
		if p.FeedbackPlan != nil {
			s.Plan = *p.FeedbackPlan
		}
	case events.RewardModelScoringPaused:
		s.ScoringPaused = true
	case events.RewardModelScoringResumed:
		s.ScoringPaused = false
	default:
		return s.applyExtraction(e)
	}
	return nil
}

// Where a claiming worker runs (RewardModelTrainingStartedV1.Compute).
const (
	ComputeLocal  = "local"
	ComputeWorker = "worker"
)

// DecideClaim lets one worker start an attempt: only a queued model whose
// dataset for that attempt is built can be claimed. compute is where the
// worker runs (ComputeLocal or ComputeWorker; "" records none).
func DecideClaim(s State, attempt int, workerID, compute string, leaseFor time.Duration) (events.RewardModelTrainingStartedV1, error) {
	if s.Status != StatusQueued || s.Attempt != attempt || s.Dataset == nil {
		return events.RewardModelTrainingStartedV1{}, lease.NotClaimable("model %s attempt %d is not claimable (status %s, attempt %d)", s.ID, attempt, s.Status, s.Attempt)
	}
	switch compute {
	case "", ComputeLocal, ComputeWorker:
	default:
		return events.RewardModelTrainingStartedV1{}, domain.InvalidField("compute",
			fmt.Sprintf("compute must be %q or %q, not %q", ComputeLocal, ComputeWorker, compute))
	}
	return events.RewardModelTrainingStartedV1{ModelID: s.ID, Attempt: attempt, WorkerID: workerID,
		LeaseSeconds: int(leaseFor / time.Second), Compute: compute}, nil
}

// TrainingCandidate is a model a read model lists as claimable: queued with
// its dataset built. The model's stream decides the claim; the list only
// nominates.
type TrainingCandidate struct {
	ModelID string
	Attempt int
}

// DecideHandBack returns a running attempt to the queue at its worker's
// request (the worker is stopping): the model is queued again, keeps its
// dataset, and the next free worker trains it from the start. A hand-back
// is no failure and does not count against lease.MaxLostRuns.
func DecideHandBack(s State, attempt int, workerID, detail string) (events.RewardModelTrainingRequeuedV1, error) {
	if err := checkHolder(s, attempt, workerID); err != nil {
		return events.RewardModelTrainingRequeuedV1{}, err
	}
	return events.RewardModelTrainingRequeuedV1{ModelID: s.ID, Attempt: attempt, WorkerID: workerID,
		Reason: events.RequeueHandedBack, Detail: lease.HandBackDetail(workerID, detail), LostRuns: len(s.Lost)}, nil
}

// checkHolder is true when workerID holds the running attempt.
func checkHolder(s State, attempt int, workerID string) error {
	if !s.HeldBy(workerID) || s.Attempt != attempt {
		return lease.NotClaimable("worker %s does not hold model %s attempt %d (status %s)", workerID, s.ID, attempt, s.Status)
	}
	return nil
}

// DecideHeartbeat renews the lease of the worker holding the attempt.
func DecideHeartbeat(s State, attempt int, workerID string, p events.Progress) (events.RewardModelHeartbeatV1, error) {
	if err := checkHolder(s, attempt, workerID); err != nil {
		return events.RewardModelHeartbeatV1{}, err
	}
	return events.RewardModelHeartbeatV1{ModelID: s.ID, Attempt: attempt, WorkerID: workerID, Progress: p}, nil
}

// DecideSucceed records the holder's result.
func DecideSucceed(s State, attempt int, workerID string, metrics json.RawMessage, artifactKey string,
	rewardStats, actionStats json.RawMessage) (events.RewardModelTrainingSucceededV1, error) {
	if err := checkHolder(s, attempt, workerID); err != nil {
		return events.RewardModelTrainingSucceededV1{}, err
	}
	if artifactKey == "" || !json.Valid(metrics) {
		return events.RewardModelTrainingSucceededV1{}, domain.Invalid("a succeeded job needs metrics and an artifact key")
	}
	return events.RewardModelTrainingSucceededV1{ModelID: s.ID, Attempt: attempt, WorkerID: workerID, Metrics: metrics,
		ArtifactKey: artifactKey, NumPairs: s.Dataset.NumPairs, RewardStats: rewardStats, ActionRewardStats: actionStats}, nil
}

// DecideFail ends the current attempt. A worker may fail only an attempt it
// holds; the API side (workerID "") may fail a queued attempt (dataset
// errors) or a running one.
func DecideFail(s State, attempt int, workerID, reason, msg string) (events.RewardModelTrainingFailedV1, error) {
	if workerID != "" {
		if err := checkHolder(s, attempt, workerID); err != nil {
			return events.RewardModelTrainingFailedV1{}, err
		}
	} else if (s.Status != StatusQueued && s.Status != StatusRunning) || s.Attempt != attempt {
		return events.RewardModelTrainingFailedV1{}, lease.NotClaimable("model %s attempt %d is %s", s.ID, attempt, s.Status)
	}
	return events.RewardModelTrainingFailedV1{ModelID: s.ID, Attempt: attempt, Reason: reason, Error: lease.FitError(msg)}, nil
}

// LeaseExpiry is what an expired lease leads to: exactly one of Requeue
// (tries left) and Fail (the lease.MaxLostRuns-th lost run).
type LeaseExpiry struct {
	Requeue *events.RewardModelTrainingRequeuedV1
	Fail    *events.RewardModelTrainingFailedV1
}

// trainingLapse words a lost training run; extraction's runs count
// against the same attempt and fail it with the same words.
var trainingLapse = lease.Rules{Silence: "sent no heartbeat for %s (last at %s)",
	Job: "training failed", Lapse: "lease expired", Remedy: "retry the model once the workers are healthy"}

// DecideLeaseExpiry handles a running attempt whose worker stopped renewing
// its lease before now: the lease sweep rule (lease.Rules.Expire).
func DecideLeaseExpiry(s State, now time.Time) (LeaseExpiry, bool) {
	x, ok := trainingLapse.Expire(s.Job, now)
	if !ok {
		return LeaseExpiry{}, false
	}
	if x.Fail != "" {
		return LeaseExpiry{Fail: lostRunsFailure(s, x.Fail)}, true
	}
	return LeaseExpiry{Requeue: &events.RewardModelTrainingRequeuedV1{ModelID: s.ID, Attempt: s.Attempt, WorkerID: s.WorkerID,
		Reason: events.RequeueLeaseExpired, Detail: x.Detail, LostRuns: x.LostRuns}}, true
}

func lostRunsFailure(s State, msg string) *events.RewardModelTrainingFailedV1 {
	return &events.RewardModelTrainingFailedV1{ModelID: s.ID, Attempt: s.Attempt, Reason: events.FailureLeaseExpired, Error: msg}
}

// DecideRetry re-queues a failed model as a new attempt (409 otherwise).
func DecideRetry(s State) (events.RewardModelRetriedV1, error) {
	if s.Status != StatusFailed {
		return events.RewardModelRetriedV1{}, &domain.ConflictError{Code: "not_failed", Message: "only a failed model can be retried; this one is " + s.Status}
	}
	return events.RewardModelRetriedV1{ModelID: s.ID, Attempt: s.Attempt + 1}, nil
}

// Fold rebuilds a model's state from its stream.
func Fold(stream []events.Envelope) (State, error) {
	return events.Fold[State](stream)
}
