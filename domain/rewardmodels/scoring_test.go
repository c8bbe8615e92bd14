package rewardmodels_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// scoringLog folds scoring-run events the way a (trace, model) stream holds
// them.
type scoringLog struct {
	t *testing.T
	s rewardmodels.ScoringState
}

func (l *scoringLog) apply(typ string, p any) {
	l.t.Helper()
	raw, err := json.Marshal(p)
	require.NoError(l.t, err)
	require.NoError(l.t, l.s.Apply(events.Envelope{Type: typ, Version: l.s.Version + 1, RecordedAt: time.Now(), Payload: raw}))
}

func (l *scoringLog) request(run string, rev int, automatic bool) {
	l.apply(events.ScoringRunRequested, events.ScoringRunRequestedV1{RunID: run, TraceID: "t", ModelID: "m", TraceRevision: rev, Automatic: automatic})
}

func (l *scoringLog) start(run string) {
	l.apply(events.ScoringRunStarted, events.ScoringRunStartedV1{RunID: run, TraceID: "t", ModelID: "m", WorkerID: "w"})
}

func (l *scoringLog) fail(run string) {
	l.start(run)
	l.apply(events.ScoringRunFailed, events.ScoringRunFailedV1{RunID: run, TraceID: "t", ModelID: "m", Error: "boom"})
}

// A trace revision gets three automatic attempts; after them background
// scoring leaves it alone while an explicit request still runs, and a new
// revision starts the count again (spec 001 "Learned action credit").
func TestAutomaticAttemptsPerRevision(t *testing.T) {
	t.Parallel()
	l := &scoringLog{t: t}
	require.True(t, l.s.EligibleForBackground(1), "a trace never scored is eligible")
	require.Equal(t, rewardmodels.NewRun, rewardmodels.DecideScoring(l.s, 1, true))
	for i, run := range []string{"a1", "a2", "a3"} {
		require.Equal(t, rewardmodels.NewRun, rewardmodels.DecideScoring(l.s, 1, true), "attempt %d", i+1)
		l.request(run, 1, true)
		require.Equal(t, rewardmodels.NotEligible, rewardmodels.DecideScoring(l.s, 1, true), "an active run is not requested again")
		l.fail(run)
	}
	require.Equal(t, 3, l.s.AutomaticFailures(1))
	require.False(t, l.s.EligibleForBackground(1), "three failed automatic attempts use the revision up")
	require.Equal(t, rewardmodels.NotEligible, rewardmodels.DecideScoring(l.s, 1, true))
	require.Equal(t, rewardmodels.NewRun, rewardmodels.DecideScoring(l.s, 1, false), "an explicit request stays retryable")

	// An explicit failure is no automatic attempt.
	l.request("e1", 1, false)
	l.fail("e1")
	require.Equal(t, 3, l.s.AutomaticFailures(1))

	// The trace changed: revision 2 has attempts of its own.
	require.True(t, l.s.EligibleForBackground(2))
	l.request("a4", 2, true)
	require.Equal(t, 0, l.s.AutomaticFailures(2))
	l.fail("a4")
	require.Equal(t, 1, l.s.AutomaticFailures(2))
	require.Equal(t, 0, l.s.AutomaticFailures(1), "the count is the current revision's")
}

// A succeeded revision is not scored again in the background, and an
// explicit request reuses the success; a new revision is eligible.
func TestSucceededRevisionIsNotRescored(t *testing.T) {
	t.Parallel()
	l := &scoringLog{t: t}
	l.request("a1", 3, true)
	l.start("a1")
	require.Equal(t, rewardmodels.ReuseRun, rewardmodels.DecideScoring(l.s, 3, false), "an explicit request reuses a running automatic run")
	l.apply(events.ScoringRunSucceeded, events.ScoringRunSucceededV1{RunID: "a1", TraceID: "t", ModelID: "m"})
	require.Equal(t, rewardmodels.NotEligible, rewardmodels.DecideScoring(l.s, 3, true))
	require.Equal(t, rewardmodels.ReuseRun, rewardmodels.DecideScoring(l.s, 3, false))
	require.Equal(t, rewardmodels.NewRun, rewardmodels.DecideScoring(l.s, 4, true))
}

// An explicit request for a trace whose automatic run still waits in its
// batch jumps the queue: a run of its own, which the stream then names (so
// the batch's claim of the old run id is refused); an explicit run that is
// queued is reused.
func TestExplicitRequestSupersedesQueuedAutomaticRun(t *testing.T) {
	t.Parallel()
	l := &scoringLog{t: t}
	l.apply(events.ScoringRunRequested, events.ScoringRunRequestedV1{RunID: "a1", TraceID: "t", ModelID: "m", TraceRevision: 1, Automatic: true, BatchID: "b"})
	require.Equal(t, "b", l.s.BatchID)
	require.Equal(t, rewardmodels.NewRun, rewardmodels.DecideScoring(l.s, 1, false))
	l.request("e1", 1, false)
	require.Equal(t, "e1", l.s.RunID)
	require.False(t, l.s.Automatic)
	require.Empty(t, l.s.BatchID)
	require.Equal(t, rewardmodels.ReuseRun, rewardmodels.DecideScoring(l.s, 1, false), "concurrent explicit requests reuse the active run")
	require.Equal(t, rewardmodels.NotEligible, rewardmodels.DecideScoring(l.s, 1, true))
}

// Pausing and resuming background scoring is the ready model's; asking for
// the state it is in appends nothing.
func TestPauseBackgroundScoring(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := runningModel(t, start)
	_, _, err := rewardmodels.DecidePauseScoring(s, true)
	var conflict *domain.ConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, "model_not_ready", conflict.Code)

	applyEvent(t, &s, events.RewardModelTrainingSucceeded, start, events.RewardModelTrainingSucceededV1{ModelID: "m", Attempt: 1, WorkerID: "w-1",
		Metrics: json.RawMessage(`{"action_scoring_version":1}`), ArtifactKey: "k"})
	typ, p, err := rewardmodels.DecidePauseScoring(s, true)
	require.NoError(t, err)
	require.Equal(t, events.RewardModelScoringPaused, typ)
	applyEvent(t, &s, typ, start, p)
	require.True(t, s.ScoringPaused)
	require.NoError(t, rewardmodels.CheckScorable(s), "a paused model still scores on request")
	typ, _, err = rewardmodels.DecidePauseScoring(s, true)
	require.NoError(t, err)
	require.Empty(t, typ, "already paused")
	typ, p, err = rewardmodels.DecidePauseScoring(s, false)
	require.NoError(t, err)
	require.Equal(t, events.RewardModelScoringResumed, typ)
	applyEvent(t, &s, typ, start, p)
	require.False(t, s.ScoringPaused)
}
