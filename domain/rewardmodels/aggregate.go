// Package rewardmodels is the reward-model aggregate: a training request and
// its attempts, from queued through a worker's claim and lease to success or
// failure. Every transition is decided here from the model's own stream.
package rewardmodels

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// Statuses a user sees.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
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
	Status    string
	Attempt   int
	Dataset   *events.RewardModelDatasetBuiltV1 // of the current attempt
	WorkerID  string
	Lease     time.Duration
	LastBeat  time.Time // start or last heartbeat of the running attempt
	Success   *events.RewardModelTrainingSucceededV1
	Error     string // of the last failure

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
		s.ID, s.Status, s.Attempt = s.Requested.ModelID, StatusQueued, 1
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
	case events.RewardModelTrainingStarted:
		var p events.RewardModelTrainingStartedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Status, s.WorkerID, s.Lease, s.LastBeat = StatusRunning, p.WorkerID, time.Duration(p.LeaseSeconds)*time.Second, e.RecordedAt
	case events.RewardModelHeartbeat:
		s.LastBeat = e.RecordedAt
	case events.RewardModelTrainingSucceeded:
		var p events.RewardModelTrainingSucceededV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Status, s.Success = StatusSucceeded, &p
	case events.RewardModelTrainingFailed:
		var p events.RewardModelTrainingFailedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Status, s.Error = StatusFailed, p.Error
	case events.RewardModelRetried:
		var p events.RewardModelRetriedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Status, s.Attempt, s.Dataset, s.WorkerID = StatusQueued, p.Attempt, nil, ""
		s.Extraction, s.Extracted, s.Plan = nil, nil, events.FeedbackPlan{}
		if p.FeedbackPlan != nil {
			s.Plan = *p.FeedbackPlan
		}
	default:
		return s.applyExtraction(e)
	}
	return nil
}

func notClaimable(format string, args ...any) error {
	return &domain.ConflictError{Code: "not_claimable", Message: fmt.Sprintf(format, args...)}
}

// DecideClaim lets one worker start an attempt: only a queued model whose
// dataset for that attempt is built can be claimed.
func DecideClaim(s State, attempt int, workerID string, lease time.Duration) (events.RewardModelTrainingStartedV1, error) {
	if s.Status != StatusQueued || s.Attempt != attempt || s.Dataset == nil {
		return events.RewardModelTrainingStartedV1{}, notClaimable("model %s attempt %d is not claimable (status %s, attempt %d)", s.ID, attempt, s.Status, s.Attempt)
	}
	return events.RewardModelTrainingStartedV1{ModelID: s.ID, Attempt: attempt, WorkerID: workerID, LeaseSeconds: int(lease / time.Second)}, nil
}

// checkHolder is true when workerID holds the running attempt.
func checkHolder(s State, attempt int, workerID string) error {
	if s.Status != StatusRunning || s.Attempt != attempt || s.WorkerID != workerID {
		return notClaimable("worker %s does not hold model %s attempt %d (status %s)", workerID, s.ID, attempt, s.Status)
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

// maxErrorChars is how much of a worker log a failure keeps (spec 002).
const maxErrorChars = 2000

// DecideFail ends the current attempt. A worker may fail only an attempt it
// holds; the API side (workerID "") may fail a queued attempt (dataset
// errors) or a running one.
func DecideFail(s State, attempt int, workerID, reason, msg string) (events.RewardModelTrainingFailedV1, error) {
	if workerID != "" {
		if err := checkHolder(s, attempt, workerID); err != nil {
			return events.RewardModelTrainingFailedV1{}, err
		}
	} else if (s.Status != StatusQueued && s.Status != StatusRunning) || s.Attempt != attempt {
		return events.RewardModelTrainingFailedV1{}, notClaimable("model %s attempt %d is %s", s.ID, attempt, s.Status)
	}
	if r := []rune(msg); len(r) > maxErrorChars {
		msg = string(r[len(r)-maxErrorChars:])
	}
	return events.RewardModelTrainingFailedV1{ModelID: s.ID, Attempt: attempt, Reason: reason, Error: msg}, nil
}

// DecideLeaseExpiry fails a running attempt whose worker stopped renewing its
// lease before now.
func DecideLeaseExpiry(s State, now time.Time) (events.RewardModelTrainingFailedV1, bool) {
	if s.Status != StatusRunning || now.Before(s.LastBeat.Add(s.Lease)) {
		return events.RewardModelTrainingFailedV1{}, false
	}
	return events.RewardModelTrainingFailedV1{ModelID: s.ID, Attempt: s.Attempt, Reason: events.FailureLeaseExpired,
		Error: fmt.Sprintf("lease expired: worker %s sent no heartbeat for %s (last at %s); the worker stopped or lost its connection. Retry the model to train it again.",
			s.WorkerID, s.Lease, s.LastBeat.UTC().Format(time.RFC3339))}, true
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
	var s State
	for _, e := range stream {
		if err := s.Apply(e); err != nil {
			return State{}, err
		}
	}
	return s, nil
}
