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
