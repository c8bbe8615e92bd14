package worker

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/criticml/critic/domain/jobs/lease"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/gpuworker/train"
	"github.com/criticml/critic/handlers/workerapi"
	"github.com/criticml/critic/projections/dispatch"
	"github.com/criticml/critic/projections/readmodel"
)

// queuedCandidate is a world with one contributing account, a frozen
// benchmark and a queued candidate.
func queuedCandidate(t *testing.T, w *evaluatorWorld) string {
	t.Helper()
	ctx := context.Background()
	alice, traces := w.reviewedAccount(t, "alice"+time.Now().Format("150405.000000"), "alice", 30, 10)
	for _, id := range traces {
		_, err := w.cmds.SetContribution.Handle(ctx, commands.SetContribution{Actor: alice, TraceID: id, Contribute: true})
		require.NoError(t, err)
	}
	_, err := w.cmds.FreezeBenchmark.Handle(ctx, commands.FreezeBenchmark{Operator: "op"})
	require.NoError(t, err)
	req, err := w.cmds.RequestCandidate.Handle(ctx, commands.RequestCandidate{BaseModel: w.base, Epochs: 1, Operator: "op"})
	require.NoError(t, err)
	return req.Candidate.CandidateID
}

func (w *evaluatorWorld) events(t *testing.T) []events.Envelope {
	t.Helper()
	loaded, err := w.store.LoadStreams(context.Background(), []string{events.EvaluatorStream})
	require.NoError(t, err)
	return loaded[events.EvaluatorStream]
}

// A worker that dies mid-candidate loses it on lease expiry: it goes back
// to the queue twice (evaluator.candidate_requeued, reason lease_expired;
// the dead worker's late heartbeat and report are refused), and the third
// lost run fails it with a readable reason. A heartbeat renews the lease.
func TestCandidateLeaseExpiryRequeuesThenFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newEvaluatorWorld(t)
	id := queuedCandidate(t, w)
	for run := 1; run <= lease.MaxLostRuns; run++ {
		dead := fmt.Sprintf("w-dead-%d", run)
		c := NewClient(w.srv.URL, testToken, dead)
		claim, err := c.ClaimCandidate(ctx, id)
		require.NoError(t, err, "run %d", run)
		require.Equal(t, 30, claim.LeaseSeconds)
		require.NoError(t, c.CandidateHeartbeat(ctx, id))
		nominated, err := w.cmds.Streams.ExpiredCandidateLeases(ctx, time.Now().Add(10*time.Second), time.Minute)
		require.NoError(t, err)
		require.Empty(t, nominated, "the sweep nominates nothing while the lease runs")
		nominated, err = w.cmds.Streams.ExpiredCandidateLeases(ctx, time.Now().Add(time.Minute), time.Minute)
		require.NoError(t, err)
		require.Equal(t, []string{id}, nominated)
		res, err := w.cmds.ExpireCandidateLease.Handle(ctx, commands.ExpireCandidateLease{ID: id, Now: time.Now().Add(10 * time.Second), Fallback: time.Minute})
		require.NoError(t, err)
		require.Empty(t, res.LastEventID, "not before the lease ends")
		_, err = w.cmds.ExpireCandidateLease.Handle(ctx, commands.ExpireCandidateLease{ID: id, Now: time.Now().Add(time.Minute), Fallback: time.Minute})
		require.NoError(t, err)
		// Its late heartbeat and report are refused.
		require.ErrorIs(t, c.CandidateHeartbeat(ctx, id), ErrNotClaimable)
		require.ErrorIs(t, c.CandidateFailed(ctx, id, "late"), ErrNotClaimable)
		evs := w.events(t)
		last := evs[len(evs)-1]
		got := w.candidate(t, id)
		if run < lease.MaxLostRuns {
			require.Equal(t, evaluator.CandidateQueued, got.Status)
			require.Equal(t, events.EvaluatorCandidateRequeued, last.Type)
			var p events.EvaluatorCandidateRequeuedV1
			require.NoError(t, last.Decode(&p))
			require.Equal(t, events.EvaluatorCandidateRequeuedV1{CandidateID: id, WorkerID: dead, Reason: events.RequeueLeaseExpired,
				Detail: p.Detail, LostRuns: run}, p)
			require.Contains(t, p.Detail, "worker "+dead+" stopped reporting (no heartbeat for 30s, the lease")
			continue
		}
		require.Equal(t, evaluator.CandidateFailed, got.Status)
		require.Equal(t, events.EvaluatorCandidateFailed, last.Type)
		lines := strings.Split(got.Error, "\n")
		require.Equal(t, "Evaluator candidate failed: the worker was lost 3 times (lease expired each time); "+
			"request a new candidate (critic evaluator train) once the workers are healthy", lines[0])
		require.Len(t, lines, 4)
		for i, l := range lines[1:] {
			require.True(t, strings.HasPrefix(l, fmt.Sprintf("run %d: worker w-dead-%d stopped reporting", i+1, i+1)), l)
		}
	}
	// A failed candidate no longer holds up the schedule.
	_, skip, err := w.cmds.ScheduledCandidate.Handle(ctx, commands.ScheduledCandidate{Base: w.base})
	require.NoError(t, err)
	require.NotContains(t, skip, "still")
}

// The API's lease sweep requeues a candidate whose worker stopped
// heartbeating, on the database's clock, and leaves a live one running.
func TestSweepRequeuesACandidateWithADeadLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newEvaluatorWorld(t)
	id := queuedCandidate(t, w)
	_, err := w.cmds.ClaimCandidate.Handle(ctx, commands.ClaimCandidate{WorkerID: "w-dead", ID: id, Lease: time.Second})
	require.NoError(t, err)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- dispatch.SweepLeases(sctx, readmodel.NewQueries(w.pool), w.cmds, 50*time.Millisecond, time.Second, slog.New(slog.DiscardHandler))
	}()
	waitFor(t, "the sweep to requeue the candidate", func() bool { return w.candidate(t, id).Status == evaluator.CandidateQueued })
	got := w.candidate(t, id)
	require.Len(t, got.Lost, 1, "the lost run is requeued, not failed")
	require.Contains(t, got.Lost[0], "worker w-dead stopped reporting (no heartbeat for 1s, the lease")

	// A claim under a long lease is left alone by the running sweep.
	_, err = w.cmds.ClaimCandidate.Handle(ctx, commands.ClaimCandidate{WorkerID: "w-live", ID: id, Lease: time.Hour})
	require.NoError(t, err)
	res, err := w.cmds.ExpireCandidateLease.Handle(ctx, commands.ExpireCandidateLease{ID: id, Now: time.Now().Add(time.Minute), Fallback: time.Second})
	require.NoError(t, err)
	require.Empty(t, res.LastEventID, "a live lease is not expired")
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, evaluator.CandidateRunning, w.candidate(t, id).Status)
}

// recordingServer is the worker service with a short lease, recording the
// status of every call per path.
type recordingServer struct {
	mu    sync.Mutex
	calls map[string][]int
	url   string
}

func newRecordingServer(t *testing.T, w *evaluatorWorld, lease time.Duration) *recordingServer {
	t.Helper()
	rs := &recordingServer{calls: map[string][]int{}}
	mux := http.NewServeMux()
	workerapi.New(workerapi.Config{Cmds: w.cmds, Token: testToken, Lease: lease}).Register(mux)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: rw, status: http.StatusOK}
		mux.ServeHTTP(rec, r)
		rs.mu.Lock()
		rs.calls[r.URL.Path] = append(rs.calls[r.URL.Path], rec.status)
		rs.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	rs.url = srv.URL
	return rs
}

func (rs *recordingServer) statuses(path string) []int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]int(nil), rs.calls[path]...)
}

// waitFor polls cond until it holds (a condition, not a timing assertion:
// the deadline only keeps a broken build from hanging).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) { s.status = code; s.ResponseWriter.WriteHeader(code) }

// The worker renews a candidate's lease while it trains: training is held
// until the API has recorded a heartbeat from it, and the candidate then
// trains to success with its lease renewed in the stream.
func TestCandidateWorkerHeartbeatsWhileTraining(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newEvaluatorWorld(t)
	id := queuedCandidate(t, w)
	rs := newRecordingServer(t, w, 3*time.Second)
	beat := jobs.JobPath(jobs.KindEvaluatorTrain, id, jobs.Beat)
	var once sync.Once
	wk, err := New(Config{Client: NewClient(rs.url, testToken, "w-beat"), Blobs: w.blobs, DataDir: t.TempDir(), Log: testLogger(t),
		TrainOptions: func(o *train.Options) {
			o.LR, o.Epochs = 3e-3, 1
			o.Progress = func(step, total int, loss, tps float64) {
				once.Do(func() { waitFor(t, "a heartbeat", func() bool { return len(rs.statuses(beat)) > 0 }) })
			}
		}})
	require.NoError(t, err)
	defer wk.Close()
	require.True(t, wk.Handle(jobs.TopicEvaluatorTrain)(ctx, mustJSON(t, jobs.EvaluatorTrainJob{CandidateID: id})))
	got := w.candidate(t, id)
	require.Equal(t, evaluator.CandidateSucceeded, got.Status, got.Error)
	require.Equal(t, http.StatusOK, rs.statuses(beat)[0])
	n := 0
	for _, e := range w.events(t) {
		if e.Type == events.EvaluatorCandidateHeartbeat {
			var p events.EvaluatorCandidateHeartbeatV1
			require.NoError(t, e.Decode(&p))
			require.Equal(t, events.EvaluatorCandidateHeartbeatV1{CandidateID: id, WorkerID: "w-beat"}, p)
			n++
		}
	}
	require.Positive(t, n)
}

// A worker whose heartbeat is refused (the candidate is no longer its: an
// operator cancelled it, or its lease expired and it went to another
// worker) stops the job and reports nothing.
func TestCandidateWorkerStopsWhenItsLeaseIsLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newEvaluatorWorld(t)
	id := queuedCandidate(t, w)
	rs := newRecordingServer(t, w, 3*time.Second)
	beat := jobs.JobPath(jobs.KindEvaluatorTrain, id, jobs.Beat)
	var once sync.Once
	wk, err := New(Config{Client: NewClient(rs.url, testToken, "w-lost"), Blobs: w.blobs, DataDir: t.TempDir(), Log: testLogger(t),
		TrainOptions: func(o *train.Options) {
			o.LR, o.Epochs = 3e-3, 1
			o.Progress = func(step, total int, loss, tps float64) {
				once.Do(func() {
					_, err := w.cmds.CancelCandidate.Handle(ctx, commands.CancelCandidate{ID: id, By: "op"})
					require.NoError(t, err)
					waitFor(t, "a refused heartbeat", func() bool {
						s := rs.statuses(beat)
						return len(s) > 0 && s[len(s)-1] == http.StatusConflict
					})
				})
			}
		}})
	require.NoError(t, err)
	defer wk.Close()
	require.True(t, wk.Handle(jobs.TopicEvaluatorTrain)(ctx, mustJSON(t, jobs.EvaluatorTrainJob{CandidateID: id})), "a lost job is acknowledged")
	// Training may end before the refused heartbeat reaches the worker;
	// then its report is refused as well. Either way nothing is recorded.
	for _, s := range rs.statuses(jobs.JobPath(jobs.KindEvaluatorTrain, id, jobs.Finish)) {
		require.Equal(t, http.StatusConflict, s)
	}
	require.Empty(t, rs.statuses(jobs.JobPath(jobs.KindEvaluatorTrain, id, jobs.Fail)), "a lost job reports no failure")
	got := w.candidate(t, id)
	require.Equal(t, evaluator.CandidateFailed, got.Status)
	require.Equal(t, "cancelled by op", got.Error)
}
