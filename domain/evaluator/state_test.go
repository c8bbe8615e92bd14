package evaluator_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
)

// stream folds payloads into a State as the evaluator stream would hold them.
type stream struct {
	s evaluator.State
	v int64
}

func (st *stream) add(t *testing.T, typ string, p any) {
	t.Helper()
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	st.v++
	st.s.Apply(events.Envelope{Type: typ, Version: st.v, Payload: raw})
}

func benchmark(n int) events.EvaluatorBenchmarkFrozenV1 {
	b := events.EvaluatorBenchmarkFrozenV1{Version: 1}
	for i := range n {
		b.Items = append(b.Items, events.EvaluatorItem{ID: string(rune('a' + i)), Slices: map[string]string{evaluator.SliceDomain: "math"}})
	}
	return b
}

func uniform(b events.EvaluatorBenchmarkFrozenV1, sign float64) map[string]float64 {
	m := map[string]float64{}
	for _, it := range b.Items {
		m[it.ID] = sign
	}
	return m
}

// TestReleaseChain: a candidate that beats chance ships as release 1; one
// scored against release 1 that regresses is refused with the slice
// named; one scored against another release than the live one is refused;
// rollbacks walk back the chain to no release.
func TestReleaseChain(t *testing.T) {
	t.Parallel()
	var st stream
	b := benchmark(6)
	st.add(t, events.EvaluatorBenchmarkFrozen, b)
	train := func(id string, incumbent int, cand, inc map[string]float64) *evaluator.Candidate {
		st.add(t, events.EvaluatorCandidateRequested, events.EvaluatorCandidateRequestedV1{CandidateID: id, BenchmarkVersion: 1, IncumbentRelease: incumbent, ArtifactKey: "k/" + id})
		st.add(t, events.EvaluatorCandidateStarted, events.EvaluatorCandidateStartedV1{CandidateID: id, WorkerID: "w"})
		c := st.s.Candidate(id)
		require.NoError(t, evaluator.CheckMargins(&b, c, cand, inc))
		st.add(t, events.EvaluatorCandidateTrained, events.EvaluatorCandidateTrainedV1{CandidateID: id, CandidateMargins: cand, IncumbentMargins: inc})
		return st.s.Candidate(id)
	}
	p := evaluator.DefaultPolicy()
	p.MinSlice = 3

	c1 := train("c1", 0, uniform(b, 1), nil)
	rel, rep, err := st.s.DecideRelease(c1, p, "op")
	require.NoError(t, err)
	require.True(t, rep.Pass)
	require.Equal(t, 1, rel.Release)
	require.Equal(t, 0, rel.Replaces)
	st.add(t, events.EvaluatorReleased, rel)
	require.Equal(t, 1, st.s.Live)

	c2 := train("c2", 1, uniform(b, -1), uniform(b, 1))
	_, _, err = st.s.DecideRelease(c2, p, "op")
	var conflict *domain.ConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, "release_gates_failed", conflict.Code)
	require.Contains(t, err.Error(), "slice domain=math (6 items)")

	c3 := train("c3", 0, uniform(b, 1), nil) // scored against chance, but release 1 is live
	_, _, err = st.s.DecideRelease(c3, p, "op")
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, "incumbent_changed", conflict.Code)

	// A margin set that does not cover the benchmark, or is not finite, is refused.
	bad := uniform(b, 1)
	delete(bad, "a")
	require.Error(t, evaluator.CheckMargins(&b, c2, bad, uniform(b, 1)))
	bad["a"] = math.NaN()
	require.Error(t, evaluator.CheckMargins(&b, c2, bad, uniform(b, 1)))
	require.Error(t, evaluator.CheckMargins(&b, c2, uniform(b, 1), nil), "an incumbent's margins are required when there is one")

	rb, err := st.s.DecideRollback("op")
	require.NoError(t, err)
	require.Equal(t, events.EvaluatorRolledBackV1{From: 1, To: 0, RolledBackBy: "op"}, rb)
	st.add(t, events.EvaluatorRolledBack, rb)
	require.Nil(t, st.s.LiveRelease())
	require.True(t, st.s.Releases[0].RolledBack)
	_, err = st.s.DecideRollback("op")
	require.ErrorAs(t, err, &conflict)

	// With nothing live, c3 (scored against chance) can ship as release 2.
	rel, _, err = st.s.DecideRelease(c3, p, "op")
	require.NoError(t, err)
	require.Equal(t, 2, rel.Release)
	st.add(t, events.EvaluatorReleased, rel)
	require.Equal(t, 2, st.s.Live)
	_, err = st.s.DecideClaim("c3")
	require.ErrorAs(t, err, &conflict, "a trained candidate cannot be claimed again")
}

// TestCandidateLeaseOnTheStreamsClock: a claim's lease runs from its
// recorded time and each heartbeat of its holder (another worker's beat
// renews nothing); a claim recorded before candidates had leases uses the
// sweep's lease; a candidate that is not running never expires.
func TestCandidateLeaseOnTheStreamsClock(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var st stream
	at := func(typ string, p any, when time.Time) {
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		st.v++
		st.s.Apply(events.Envelope{Type: typ, Version: st.v, Payload: raw, RecordedAt: when})
	}
	at(events.EvaluatorCandidateRequested, events.EvaluatorCandidateRequestedV1{CandidateID: "c"}, t0)
	_, expired := st.s.DecideLeaseExpiry("c", t0.Add(time.Hour), time.Second)
	require.False(t, expired, "a queued candidate holds no lease")
	at(events.EvaluatorCandidateStarted, events.EvaluatorCandidateStartedV1{CandidateID: "c", WorkerID: "w", LeaseSeconds: 30}, t0)
	at(events.EvaluatorCandidateHeartbeat, events.EvaluatorCandidateHeartbeatV1{CandidateID: "c", WorkerID: "w"}, t0.Add(20*time.Second))
	at(events.EvaluatorCandidateHeartbeat, events.EvaluatorCandidateHeartbeatV1{CandidateID: "c", WorkerID: "other"}, t0.Add(45*time.Second))
	_, expired = st.s.DecideLeaseExpiry("c", t0.Add(49*time.Second), time.Hour)
	require.False(t, expired, "the holder's beat renewed it")
	out, expired := st.s.DecideLeaseExpiry("c", t0.Add(50*time.Second), time.Hour)
	require.True(t, expired, "another worker's beat renews nothing")
	require.NotNil(t, out.Requeue)
	require.Equal(t, 1, out.Requeue.LostRuns)
	require.Equal(t, "worker w stopped reporting (no heartbeat for 30s, the lease; last at 2026-01-01T12:00:20Z): it stopped, crashed or lost its connection",
		out.Requeue.Detail)

	at(events.EvaluatorCandidateRequested, events.EvaluatorCandidateRequestedV1{CandidateID: "old"}, t0)
	at(events.EvaluatorCandidateStarted, events.EvaluatorCandidateStartedV1{CandidateID: "old", WorkerID: "w"}, t0)
	_, expired = st.s.DecideLeaseExpiry("old", t0.Add(59*time.Second), time.Minute)
	require.False(t, expired)
	_, expired = st.s.DecideLeaseExpiry("old", t0.Add(time.Minute), time.Minute)
	require.True(t, expired, "a claim without a recorded lease has the sweep's")
	require.Equal(t, []string{"c", "old"}, st.s.Running())
}
