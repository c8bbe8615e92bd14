package rewardmodels_test

import (
	"encoding/json"
	"fmt"
	"github.com/criticml/critic/domain/jobs/lease"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// runningModel folds a requested, built and claimed model (attempt 1 on w-1).
func runningModel(t *testing.T, start time.Time) rewardmodels.State {
	t.Helper()
	var s rewardmodels.State
	ver := int64(0)
	apply := func(typ string, at time.Time, p any) {
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		ver++
		require.NoError(t, s.Apply(events.Envelope{Type: typ, Version: ver, OwnerID: "o", RecordedAt: at, Payload: raw}))
	}
	apply(events.RewardModelRequested, start, events.RewardModelRequestedV1{ModelID: "m", Name: "rm"})
	apply(events.RewardModelDatasetBuilt, start, events.RewardModelDatasetBuiltV1{ModelID: "m", Attempt: 1, DatasetKey: "k", NumPairs: 4})
	claim, err := rewardmodels.DecideClaim(s, 1, "w-1", rewardmodels.ComputeWorker, 30*time.Second)
	require.NoError(t, err)
	apply(events.RewardModelTrainingStarted, start, claim)
	return s
}

func applyEvent(t *testing.T, s *rewardmodels.State, typ string, at time.Time, p any) {
	t.Helper()
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	require.NoError(t, s.Apply(events.Envelope{Type: typ, Version: s.Version + 1, OwnerID: "o", RecordedAt: at, Payload: raw}))
}

// A stopping worker hands its attempt back: the model is queued again with
// its dataset, claimable by another worker, and a hand-back from a worker
// that does not hold it is refused.
func TestHandBackRequeuesTheAttempt(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := runningModel(t, start)
	_, err := rewardmodels.DecideHandBack(s, 1, "w-2", "stopping")
	require.Error(t, err, "only the holder hands back")
	ev, err := rewardmodels.DecideHandBack(s, 1, "w-1", "worker w-1 is shutting down (SIGTERM)\nmore")
	require.NoError(t, err)
	require.Equal(t, events.RequeueHandedBack, ev.Reason)
	require.Equal(t, "worker w-1 is shutting down (SIGTERM)", ev.Detail)
	applyEvent(t, &s, events.RewardModelTrainingRequeued, start, ev)
	require.Equal(t, rewardmodels.StatusQueued, s.Status)
	require.Equal(t, 1, s.Attempt)
	require.NotNil(t, s.Dataset)
	require.Empty(t, s.Lost, "a hand-back is no lost run")
	_, err = rewardmodels.DecideHeartbeat(s, 1, "w-1", events.Progress{})
	require.Error(t, err, "the old holder's heartbeat is refused")
	claim, err := rewardmodels.DecideClaim(s, 1, "w-2", rewardmodels.ComputeWorker, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, "w-2", claim.WorkerID)
	_, err = rewardmodels.DecideClaim(s, 1, "w-2", "gpu", 30*time.Second)
	require.Error(t, err, "an unknown compute is refused")
}

// A lost lease goes back to the queue twice; the third fails the model with
// a first line saying what happened and one line per lost run.
func TestLeaseExpiryRetriesThenFails(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := runningModel(t, start)
	_, expired := rewardmodels.DecideLeaseExpiry(s, start.Add(10*time.Second))
	require.False(t, expired, "a live lease is left alone")
	at := start
	for run := 1; run <= lease.MaxLostRuns; run++ {
		at = at.Add(time.Minute)
		out, expired := rewardmodels.DecideLeaseExpiry(s, at)
		require.True(t, expired)
		if run < lease.MaxLostRuns {
			require.Nil(t, out.Fail)
			require.NotNil(t, out.Requeue)
			require.Equal(t, run, out.Requeue.LostRuns)
			require.Equal(t, events.RequeueLeaseExpired, out.Requeue.Reason)
			applyEvent(t, &s, events.RewardModelTrainingRequeued, at, out.Requeue)
			require.Equal(t, rewardmodels.StatusQueued, s.Status)
			claim, err := rewardmodels.DecideClaim(s, 1, fmt.Sprintf("w-%d", run+1), rewardmodels.ComputeWorker, 30*time.Second)
			require.NoError(t, err)
			applyEvent(t, &s, events.RewardModelTrainingStarted, at, claim)
			continue
		}
		require.Nil(t, out.Requeue)
		require.NotNil(t, out.Fail)
		require.Equal(t, events.FailureLeaseExpired, out.Fail.Reason)
		lines := strings.Split(out.Fail.Error, "\n")
		require.Equal(t, "training failed: the worker was lost 3 times (lease expired each time); retry the model once the workers are healthy", lines[0])
		require.Len(t, lines, 4)
		require.True(t, strings.HasPrefix(lines[1], "run 1: worker w-1 sent no heartbeat"), lines[1])
		require.True(t, strings.HasPrefix(lines[3], "run 3: worker w-3 sent no heartbeat"), lines[3])
	}
	// A retry starts a new attempt with no lost runs.
	applyEvent(t, &s, events.RewardModelTrainingFailed, at, events.RewardModelTrainingFailedV1{ModelID: "m", Attempt: 1})
	applyEvent(t, &s, events.RewardModelRetried, at, events.RewardModelRetriedV1{ModelID: "m", Attempt: 2})
	require.Empty(t, s.Lost)
}

// A long failure keeps its first line and the end of the log from a line
// boundary; a short one is untouched.
func TestFitErrorKeepsHeadlineAndWholeLines(t *testing.T) {
	t.Parallel()
	require.Equal(t, "boom\nline", lease.FitError("boom\nline"))
	var log strings.Builder
	for i := range 200 {
		fmt.Fprintf(&log, "\nlevel=INFO msg=\"step %d/200 loss 0.6931\"", i+1)
	}
	msg := lease.FitError("training failed: base model x: not found" + log.String())
	require.LessOrEqual(t, len([]rune(msg)), lease.MaxErrorChars)
	lines := strings.Split(msg, "\n")
	require.Equal(t, "training failed: base model x: not found", lines[0])
	require.Equal(t, "…", lines[1], "the cut is marked")
	for _, l := range lines[2:] {
		require.True(t, strings.HasPrefix(l, "level=INFO msg=\"step "), "a whole line: %q", l)
	}
	require.Equal(t, `level=INFO msg="step 200/200 loss 0.6931"`, lines[len(lines)-1])
	// The old cut: the last 2000 characters, starting mid-line.
	full := "training failed" + log.String()
	old := string([]rune(full)[len([]rune(full))-2000:])
	require.False(t, strings.HasPrefix(old, "level="), "the old tail began mid-line (this test can fail)")
}
