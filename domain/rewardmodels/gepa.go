package rewardmodels

import (
	"fmt"
	"strings"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs/lease"
	"github.com/criticml/critic/domain/traces"
)

// GEPA request defaults (spec 001 "Skill creation (GEPA)").
const (
	DefaultGepaTaskModel       = "anthropic/claude-haiku-4-5"
	DefaultGepaReflectionModel = "anthropic/claude-sonnet-5"
	DefaultGepaMaxMetricCalls  = 40
	// MaxGepaMetricCalls bounds one run's spend.
	MaxGepaMetricCalls = 10000
)

// GepaState is a GEPA run as its stream tells.
type GepaState struct {
	Version   int64
	OwnerID   string
	Requested events.GepaRunRequestedV1
	lease.Job
}

// Apply folds one gepa_run event. An unreadable payload is an error (an
// events.UnreadableError), as in every other aggregate.
func (s *GepaState) Apply(e events.Envelope) error {
	s.Version, s.OwnerID = e.Version, e.OwnerID
	switch e.Type {
	case events.GepaRunRequested:
		if err := e.DecodeOrFail(&s.Requested); err != nil {
			return err
		}
		s.Queue()
	case events.GepaRunStarted:
		var p events.GepaRunStartedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Claimed(p.WorkerID, p.LeaseSeconds, e.RecordedAt)
	case events.GepaRunHeartbeat, events.GepaRunCandidateEvaluated:
		s.Beat(e.RecordedAt)
	case events.GepaRunRequeued:
		var p events.GepaRunRequeuedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.Requeued(p.Reason, p.Detail)
	case events.GepaRunSucceeded:
		s.Status = RunSucceeded
	case events.GepaRunFailed:
		s.Status = RunFailed
	}
	return nil
}

// CheckGepaHolder is nil when workerID holds the running run.
func CheckGepaHolder(s GepaState, runID, workerID string) error {
	if !s.HeldBy(workerID) {
		return lease.NotClaimable("worker %s does not hold GEPA run %s (status %s)", workerID, runID, s.Status)
	}
	return nil
}

// CheckGepaModel: a GEPA run needs a succeeded model (spec 004: 422 otherwise).
func CheckGepaModel(m State) error {
	if m.Status != StatusSucceeded || m.Success == nil {
		return &domain.ValidationError{Code: "model_not_ready", Field: "reward_model_id",
			Message: "the reward model has not succeeded (status " + m.Status + "); GEPA needs a trained model"}
	}
	return nil
}

// GepaMessage is one input message of a GEPA example.
type GepaMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// GepaExample is one line of gepa_examples.jsonl (spec 001 job contract).
type GepaExample struct {
	TraceID  string        `json:"trace_id"`
	System   *string       `json:"system"`
	Messages []GepaMessage `json:"messages"`
	Feedback []string      `json:"feedback"`
}

// GepaExampleOf builds a trace's example: its concatenated system steps
// (nil when none), its non-system steps before the first assistant step,
// and its feedback — every comment not flagged as a label error, then the
// model's findings on the trace that its training dataset included. ok is
// false when nothing comes before the first assistant step (spec 004: the
// trace is skipped).
func GepaExampleOf(tr traces.State, findings []events.Finding) (GepaExample, bool) {
	ex := GepaExample{TraceID: tr.ID, Messages: []GepaMessage{}, Feedback: []string{}}
	var sys []string
	for _, st := range tr.Steps {
		if st.Role == domain.RoleAssistant {
			break
		}
		if st.Role == domain.RoleSystem {
			sys = append(sys, st.Content)
			continue
		}
		ex.Messages = append(ex.Messages, GepaMessage{Role: string(st.Role), Content: st.Content})
	}
	if len(ex.Messages) == 0 {
		return ex, false
	}
	if len(sys) > 0 {
		ex.System = new(strings.Join(sys, "\n\n"))
	}
	index := map[string]int{}
	for _, st := range tr.Steps {
		index[st.ID] = st.Index
	}
	// In id order: the same trace gives the same example.
	for _, a := range tr.AnnotationsInOrder() {
		if a.LabelError || a.Comment == nil || strings.TrimSpace(*a.Comment) == "" {
			continue
		}
		c := strings.TrimSpace(*a.Comment)
		if a.StepID != "" {
			c = fmt.Sprintf("On step %d: %s", index[a.StepID], c)
		}
		ex.Feedback = append(ex.Feedback, c)
	}
	for _, f := range findings {
		if f.TraceID != tr.ID || f.EvidenceQuote == nil || (f.Label != "positive" && f.Label != "negative") {
			continue
		}
		ex.Feedback = append(ex.Feedback, fmt.Sprintf("Evidence (%s, step %d): %q — %s", f.Label, f.StepIndex, *f.EvidenceQuote, f.Reason))
	}
	return ex, true
}

// DecideGepaHandBack returns a running run to the queue at its worker's
// request (the worker is stopping): the next free worker runs it from the
// start. A hand-back is no failure and does not count against lease.MaxLostRuns.
func DecideGepaHandBack(s GepaState, runID, workerID, detail string) (events.GepaRunRequeuedV1, error) {
	if err := CheckGepaHolder(s, runID, workerID); err != nil {
		return events.GepaRunRequeuedV1{}, err
	}
	return events.GepaRunRequeuedV1{RunID: runID, WorkerID: workerID, Reason: events.RequeueHandedBack,
		Detail: lease.HandBackDetail(workerID, detail), LostRuns: len(s.Lost)}, nil
}

// GepaLeaseExpiry is what an expired GEPA lease leads to: exactly one of
// Requeue (tries left) and Fail (the lease.MaxLostRuns-th lost run).
type GepaLeaseExpiry struct {
	Requeue *events.GepaRunRequeuedV1
	Fail    *events.GepaRunFailedV1
}

// GepaLapse words a lost GEPA run.
var gepaLapse = lease.Rules{Silence: "stopped reporting (no heartbeat for %s, the lease; last at %s)",
	Job: "GEPA run failed", Lapse: "lease expired", Remedy: "start a new run once the workers are healthy"}

// DecideGepaLeaseExpiry handles a running run whose worker stopped renewing
// its lease before now: the lease sweep rule (lease.Rules.Expire).
func DecideGepaLeaseExpiry(s GepaState, runID string, now time.Time) (GepaLeaseExpiry, bool) {
	x, ok := gepaLapse.Expire(s.Job, now)
	switch {
	case !ok:
		return GepaLeaseExpiry{}, false
	case x.Fail != "":
		return GepaLeaseExpiry{Fail: &events.GepaRunFailedV1{RunID: runID, Error: x.Fail}}, true
	}
	return GepaLeaseExpiry{Requeue: &events.GepaRunRequeuedV1{RunID: runID, WorkerID: s.WorkerID,
		Reason: events.RequeueLeaseExpired, Detail: x.Detail, LostRuns: x.LostRuns}}, true
}
