package rewardmodels

import (
	"encoding/json"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs/lease"
)

// Run statuses of a scoring run.
const (
	RunQueued    = lease.Queued
	RunRunning   = lease.Running
	RunSucceeded = lease.Succeeded
	RunFailed    = lease.Failed
)

// ScoringState is the runs of one (trace, model) as their stream tells.
type ScoringState struct {
	Version  int64
	RunID    string
	Revision int
	// Job is the run's claim: scoring runs send no heartbeat, so the
	// sweep times a run from its start (see commands.ExpireScoringRun).
	lease.Job
	// Automatic and BatchID are the current run's: background scoring's
	// (spec 001 "Learned action credit") or an explicit request's.
	Automatic bool
	BatchID   string
	// AttemptRevision is the trace revision AutoFailures counts for: the
	// automatic runs of that revision that failed. A request naming
	// another revision starts the count again.
	AttemptRevision int
	AutoFailures    int
}

// MaxAutomaticAttempts is how many automatic runs a trace revision gets
// (spec 001): after that many failures only an explicit request scores it.
const MaxAutomaticAttempts = 3

// ScoringDecision is what a scoring request leads to.
type ScoringDecision int

// Scoring decisions.
const (
	// ReuseRun: the active run, or the one that succeeded for this
	// revision, answers the request.
	ReuseRun ScoringDecision = iota
	// NewRun: request a new run (for an explicit request whose active run
	// is a queued automatic one, the new run supersedes it: the batch's
	// claim skips a run id that is no longer the stream's).
	NewRun
	// NotEligible: background scoring leaves this revision alone (scored,
	// active, or out of automatic attempts).
	NotEligible
)

// DecideScoring decides a request to score the trace at revision. An
// explicit request is always retryable and jumps the queue: it reuses a
// running run or a success at this revision, and otherwise starts a run of
// its own, even over a queued automatic one. An automatic request runs only
// while the revision is eligible (EligibleForBackground).
func DecideScoring(s ScoringState, revision int, automatic bool) ScoringDecision {
	succeeded := s.Status == RunSucceeded && s.Revision == revision
	if automatic {
		if s.EligibleForBackground(revision) {
			return NewRun
		}
		return NotEligible
	}
	if succeeded || (s.Active() && !(s.Status == RunQueued && s.Automatic)) {
		return ReuseRun
	}
	return NewRun
}

// EligibleForBackground says whether background scoring may request a run
// for revision: none succeeded at it, none is active, and it has failed
// fewer than MaxAutomaticAttempts automatic runs.
func (s ScoringState) EligibleForBackground(revision int) bool {
	if s.Active() || (s.Status == RunSucceeded && s.Revision == revision) {
		return false
	}
	return s.AutomaticFailures(revision) < MaxAutomaticAttempts
}

// AutomaticFailures is how many automatic runs failed at revision.
func (s ScoringState) AutomaticFailures(revision int) int {
	if s.AttemptRevision != revision {
		return 0
	}
	return s.AutoFailures
}

// Apply folds one scoring-run event.
func (s *ScoringState) Apply(e events.Envelope) error {
	s.Version = e.Version
	switch e.Type {
	case events.ScoringRunRequested:
		var p events.ScoringRunRequestedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.RunID, s.Revision = p.RunID, p.TraceRevision
		s.Automatic, s.BatchID = p.Automatic, p.BatchID
		if s.AttemptRevision != p.TraceRevision {
			s.AttemptRevision, s.AutoFailures = p.TraceRevision, 0
		}
		s.Queue()
	case events.ScoringRunStarted:
		var p events.ScoringRunStartedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Claimed(p.WorkerID, 0, e.RecordedAt)
	case events.ScoringRunRequeued:
		var p events.ScoringRunRequeuedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Requeued(p.Reason, p.Detail)
	case events.ScoringRunSucceeded:
		s.Status = RunSucceeded
	case events.ScoringRunFailed:
		s.Status = RunFailed
		if s.Automatic {
			s.AutoFailures++
		}
	}
	return nil
}

// Active reports a queued or running run, which new requests reuse.
func (s ScoringState) Active() bool { return s.Status == RunQueued || s.Status == RunRunning }

// ActionScoringVersion reads metrics.action_scoring_version: 1 when the
// model was trained on action comparisons and can score actions.
func ActionScoringVersion(metrics json.RawMessage) int {
	var m struct {
		V *int `json:"action_scoring_version"`
	}
	if json.Unmarshal(metrics, &m) != nil || m.V == nil {
		return 0
	}
	return *m.V
}

// CheckScorable says whether a model can score a trace's actions (spec 001:
// 422 for a model without action training; the model must have succeeded).
func CheckScorable(m State) error {
	if m.Status != StatusSucceeded || m.Success == nil {
		return &domain.ValidationError{Code: "model_not_ready", Field: "reward_model_id", Message: "the reward model has not succeeded (status " + m.Status + ")"}
	}
	if ActionScoringVersion(m.Success.Metrics) != 1 {
		return &domain.ValidationError{Code: "incompatible_model", Field: "reward_model_id",
			Message: "this reward model was not trained on action comparisons (metrics.action_scoring_version is not 1); train a new model with step ratings on assistant actions"}
	}
	return nil
}

// DecidePauseScoring pauses (paused) or resumes a ready model's background
// scoring: the event to append, or "" when the model is already so.
func DecidePauseScoring(m State, paused bool) (string, any, error) {
	if m.Status != StatusSucceeded {
		return "", nil, &domain.ConflictError{Code: "model_not_ready",
			Message: "reward model " + m.ID + " is " + m.Status + ": background scoring starts once it has succeeded"}
	}
	if m.ScoringPaused == paused {
		return "", nil, nil
	}
	if paused {
		return events.RewardModelScoringPaused, events.RewardModelScoringPausedV1{ModelID: m.ID}, nil
	}
	return events.RewardModelScoringResumed, events.RewardModelScoringPausedV1{ModelID: m.ID}, nil
}
