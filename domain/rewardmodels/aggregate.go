// Package rewardmodels is the reward-model aggregate: a training request and
// its attempts, from queued through a worker's claim and lease to success or
// failure. Every transition is decided here from the model's own stream.
package rewardmodels

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
	// QueuedBy is the correlation id of the event that queued the current
	// attempt (the request, or the retry): a worker pulling the attempt
	// keeps it, so one id leads from the request to the worker's reports.
	QueuedBy string
	// LostRuns are the current attempt's runs whose lease expired (what
	// happened to each, oldest first): after MaxLostRuns the attempt fails
	// instead of going back to the queue.
	LostRuns []string

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
		s.ID, s.Status, s.Attempt, s.QueuedBy = s.Requested.ModelID, StatusQueued, 1, e.CorrelationID
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
	case events.RewardModelTrainingRequeued:
		var p events.RewardModelTrainingRequeuedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Status, s.WorkerID = StatusQueued, ""
		if p.Reason == events.RequeueLeaseExpired {
			s.LostRuns = append(s.LostRuns, p.Detail)
		}
	case events.RewardModelRetried:
		var p events.RewardModelRetriedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Status, s.Attempt, s.Dataset, s.WorkerID, s.LostRuns, s.QueuedBy = StatusQueued, p.Attempt, nil, "", nil, e.CorrelationID
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

// Where a claiming worker runs (RewardModelTrainingStartedV1.Compute).
const (
	ComputeLocal  = "local"
	ComputeWorker = "worker"
)

// DecideClaim lets one worker start an attempt: only a queued model whose
// dataset for that attempt is built can be claimed. compute is where the
// worker runs (ComputeLocal or ComputeWorker; "" records none).
func DecideClaim(s State, attempt int, workerID, compute string, lease time.Duration) (events.RewardModelTrainingStartedV1, error) {
	if s.Status != StatusQueued || s.Attempt != attempt || s.Dataset == nil {
		return events.RewardModelTrainingStartedV1{}, notClaimable("model %s attempt %d is not claimable (status %s, attempt %d)", s.ID, attempt, s.Status, s.Attempt)
	}
	switch compute {
	case "", ComputeLocal, ComputeWorker:
	default:
		return events.RewardModelTrainingStartedV1{}, &domain.ValidationError{Code: "invalid_request", Field: "compute",
			Message: fmt.Sprintf("compute must be %q or %q, not %q", ComputeLocal, ComputeWorker, compute)}
	}
	return events.RewardModelTrainingStartedV1{ModelID: s.ID, Attempt: attempt, WorkerID: workerID,
		LeaseSeconds: int(lease / time.Second), Compute: compute}, nil
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
// is no failure and does not count against MaxLostRuns.
func DecideHandBack(s State, attempt int, workerID, detail string) (events.RewardModelTrainingRequeuedV1, error) {
	if err := checkHolder(s, attempt, workerID); err != nil {
		return events.RewardModelTrainingRequeuedV1{}, err
	}
	if detail == "" {
		detail = "worker " + workerID + " stopped"
	}
	return events.RewardModelTrainingRequeuedV1{ModelID: s.ID, Attempt: attempt, WorkerID: workerID,
		Reason: events.RequeueHandedBack, Detail: firstLine(detail, 500), LostRuns: len(s.LostRuns)}, nil
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

// MaxErrorChars is maxErrorChars for the worker side, which shapes its
// report to fit (FitError).
const MaxErrorChars = maxErrorChars

// FitError shapes a failure message to at most maxErrorChars characters the
// way a reader wants it: the first line (what happened) is kept, then as
// much of the end of the rest (the log) as fits, starting at a line
// boundary, so no line is shown cut at its start. A message that already
// fits is returned as it is.
func FitError(msg string) string {
	r := []rune(msg)
	if len(r) <= maxErrorChars {
		return msg
	}
	head, rest, _ := strings.Cut(msg, "\n")
	head = firstLine(head, maxErrorChars/4)
	const marker = "…\n"
	room := maxErrorChars - len([]rune(head)) - 1 - len([]rune(marker))
	tail := []rune(rest)
	if len(tail) > room {
		tail = tail[len(tail)-room:]
		t := string(tail)
		if i := strings.IndexByte(t, '\n'); i >= 0 && i+1 < len(t) {
			t = t[i+1:] // start at the next whole line
		}
		return head + "\n" + marker + t
	}
	return head + "\n" + string(tail)
}

// firstLine is s's first line, at most n characters.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
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
		return events.RewardModelTrainingFailedV1{}, notClaimable("model %s attempt %d is %s", s.ID, attempt, s.Status)
	}
	return events.RewardModelTrainingFailedV1{ModelID: s.ID, Attempt: attempt, Reason: reason, Error: FitError(msg)}, nil
}

// MaxLostRuns is how many runs of one attempt may lose their worker (lease
// expired: the worker crashed, was killed or lost its network) before the
// attempt fails; until then each one goes back to the queue by itself.
const MaxLostRuns = 3

// LeaseExpiry is what an expired lease leads to: exactly one of Requeue
// (tries left) and Fail (the MaxLostRuns-th lost run).
type LeaseExpiry struct {
	Requeue *events.RewardModelTrainingRequeuedV1
	Fail    *events.RewardModelTrainingFailedV1
}

// DecideLeaseExpiry handles a running attempt whose worker stopped renewing
// its lease before now: it goes back to the queue, or, once MaxLostRuns
// runs were lost, fails with a message whose first line says so and whose
// next lines list each lost run.
func DecideLeaseExpiry(s State, now time.Time) (LeaseExpiry, bool) {
	if s.Status != StatusRunning || now.Before(s.LastBeat.Add(s.Lease)) {
		return LeaseExpiry{}, false
	}
	detail := fmt.Sprintf("worker %s sent no heartbeat for %s (last at %s): it stopped, crashed or lost its connection",
		s.WorkerID, s.Lease, s.LastBeat.UTC().Format(time.RFC3339))
	lost := append(slices.Clone(s.LostRuns), detail)
	if len(lost) < MaxLostRuns {
		return LeaseExpiry{Requeue: &events.RewardModelTrainingRequeuedV1{ModelID: s.ID, Attempt: s.Attempt, WorkerID: s.WorkerID,
			Reason: events.RequeueLeaseExpired, Detail: detail, LostRuns: len(lost)}}, true
	}
	return LeaseExpiry{Fail: lostRunsFailure(s, lost)}, true
}

// lostRunsFailure fails the attempt after its MaxLostRuns-th lost run
// (training's or feedback extraction's: they count together, since either
// way a worker died holding the attempt): the first line says what
// happened, one line per lost run follows.
func lostRunsFailure(s State, lost []string) *events.RewardModelTrainingFailedV1 {
	var b strings.Builder
	fmt.Fprintf(&b, "training failed: the worker was lost %d times (lease expired each time); retry the model once the workers are healthy", len(lost))
	for i, d := range lost {
		fmt.Fprintf(&b, "\nrun %d: %s", i+1, d)
	}
	return &events.RewardModelTrainingFailedV1{ModelID: s.ID, Attempt: s.Attempt, Reason: events.FailureLeaseExpired, Error: FitError(b.String())}
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
