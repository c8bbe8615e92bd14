package duck

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func currentReplica(s *Snapshots, owner string) *replica {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.owners[owner]; o != nil {
		return o.rep
	}
	return nil
}

// Repeated queries reuse one replica; a committed change, a reset or a
// duplicate-free batch makes the next query see the new state.
func TestReplicaFollowsTheSnapshot(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	ctx := context.Background()
	seedTrace(t, s, "alice", "t1", 3, "A")
	require.EqualValues(t, 3, count(t, s, "alice", "SELECT count(*) FROM steps"))
	r := currentReplica(s, "alice")
	require.NotNil(t, r)
	require.EqualValues(t, 3, count(t, s, "alice", "SELECT count(*) FROM steps"))
	require.Same(t, r, currentReplica(s, "alice"), "an unchanged snapshot reuses its replica")

	// A duplicate changes nothing, so the replica stays.
	applied, err := s.Apply(ctx, "alice", "import-t1", func(tx *Tx) error { return tx.DeleteTrace(ctx, "t1") })
	require.NoError(t, err)
	require.False(t, applied)
	require.Same(t, r, currentReplica(s, "alice"))

	seedTrace(t, s, "alice", "t2", 4, "A")
	require.Nil(t, currentReplica(s, "alice"), "a change retires the replica at once")
	require.EqualValues(t, 7, count(t, s, "alice", "SELECT count(*) FROM steps"))
	require.NotSame(t, r, currentReplica(s, "alice"))

	require.NoError(t, s.Reset("alice"))
	require.EqualValues(t, 0, count(t, s, "alice", "SELECT count(*) FROM steps"))
}

// Each query runs on its own connection with the sandbox's settings: UTC,
// external access off, configuration locked, whatever ran before.
func TestReplicaConnectionsAreFreshAndLocked(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	seedTrace(t, s, "alice", "t1", 2, "A")
	for range 3 {
		res, err := s.Query(context.Background(), "alice", `SELECT current_setting('TimeZone'),
			current_setting('enable_external_access'), current_setting('lock_configuration'),
			(SELECT count(*) FROM duckdb_databases() WHERE NOT internal), strftime(TIMESTAMPTZ '2026-01-01 00:30:00+00', '%H')`)
		require.NoError(t, err)
		require.Equal(t, [][]any{{"UTC", false, true, int64(1), "00"}}, res.Rows)
		_, err = s.Query(context.Background(), "alice", "SET TimeZone = 'Asia/Tokyo'")
		require.Error(t, err)
	}
}

// Replicas beyond ReplicaBytes are dropped least recently used first; a
// dropped one is rebuilt on demand with the same answers.
func TestReplicaBudgetEvicts(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{ReplicaBytes: 1})
	seedTrace(t, s, "alice", "t1", 3, "A")
	seedTrace(t, s, "bob", "t1", 5, "B")
	for range 3 {
		require.EqualValues(t, 3, count(t, s, "alice", "SELECT count(*) FROM steps"))
		require.EqualValues(t, 5, count(t, s, "bob", "SELECT count(*) FROM steps"))
	}
	s.mu.Lock()
	require.LessOrEqual(t, s.replicaBytes, int64(1))
	s.mu.Unlock()
}

func TestReplicaDroppedWhenIdle(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{ReplicaIdle: 50 * time.Millisecond})
	seedTrace(t, s, "alice", "t1", 3, "A")
	require.EqualValues(t, 3, count(t, s, "alice", "SELECT count(*) FROM steps"))
	require.Eventually(t, func() bool { return currentReplica(s, "alice") == nil }, 5*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 3, count(t, s, "alice", "SELECT count(*) FROM steps"))
}

// Many concurrent queries of one owner while it is written: all succeed,
// each sees a committed state, and builds are shared rather than repeated.
func TestReplicaConcurrentQueriesAndWrites(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{MaxQueriesPerOwner: 2})
	seedTrace(t, s, "alice", "t0", 10, "A")
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; i < 10; i++ {
			seedTrace(t, s, "alice", fmt.Sprintf("t%d", i), 10, "A")
		}
	})
	errs := make(chan error, 64)
	for range 8 {
		wg.Go(func() {
			for range 8 {
				res, err := s.Query(context.Background(), "alice", "SELECT count(*) % 10, count(DISTINCT trace_id) * 10 = count(*) FROM steps")
				if err != nil {
					errs <- err
					return
				}
				if res.Rows[0][0] != int64(0) || res.Rows[0][1] != true {
					errs <- fmt.Errorf("torn read: %v", res.Rows)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 100, count(t, s, "alice", "SELECT count(*) FROM steps"))
}

// A query that times out while its replica is built leaves the build to
// finish for the next query; Close during a build does not hang.
func TestReplicaCallerGivesUp(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	seedTrace(t, s, "alice", "t1", 3, "A")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Query(ctx, "alice", "SELECT count(*) FROM steps")
	require.ErrorIs(t, err, context.Canceled)
	require.EqualValues(t, 3, count(t, s, "alice", "SELECT count(*) FROM steps"))
}

func TestDirectoryIsLocked(t *testing.T) {
	t.Parallel()
	s, dir := newSnapshots(t, Options{})
	_, err := New(dir, Options{})
	require.ErrorIs(t, err, ErrLocked)
	err = Rebuild(context.Background(), dir, Options{}, func(context.Context, *Snapshots) error { return nil })
	require.ErrorIs(t, err, ErrLocked)
	_ = s
}

// Rebuild swaps in a directory written from scratch only when fill succeeds.
func TestRebuildSwapsOnSuccessOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() + "/snapshots"
	s, err := New(dir, Options{})
	require.NoError(t, err)
	seedTrace(t, s, "alice", "old", 3, "A")
	require.NoError(t, s.Close())

	boom := fmt.Errorf("boom")
	err = Rebuild(context.Background(), dir, Options{}, func(ctx context.Context, n *Snapshots) error {
		seedTrace(t, n, "alice", "new", 2, "A")
		return boom
	})
	require.ErrorIs(t, err, boom)
	s, err = New(dir, Options{})
	require.NoError(t, err)
	require.EqualValues(t, 3, count(t, s, "alice", "SELECT count(*) FROM steps WHERE trace_id = 'old'"))
	require.NoError(t, s.Close())

	require.NoError(t, Rebuild(context.Background(), dir, Options{}, func(ctx context.Context, n *Snapshots) error {
		seedTrace(t, n, "alice", "new", 2, "A")
		return nil
	}))
	s, err = New(dir, Options{})
	require.NoError(t, err)
	defer s.Close()
	res, err := s.Query(context.Background(), "alice", "SELECT trace_id, count(*) FROM steps GROUP BY ALL")
	require.NoError(t, err)
	require.Equal(t, [][]any{{"new", int64(2)}}, res.Rows)
}

// A large replica is replaced by a compressed copy while its owner keeps
// querying back to back.
func TestReplicaIsCompressedWhileServing(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	loadSteps(t, s, "alice", 200_000)
	require.EqualValues(t, 200_000, count(t, s, "alice", "SELECT count(*) FROM steps"))
	first := currentReplica(s, "alice")
	s.mu.Lock()
	before := first.bytes
	s.mu.Unlock()
	require.GreaterOrEqual(t, before, int64(compressMin))
	start := time.Now()
	require.Eventually(t, func() bool {
		require.EqualValues(t, 200_000, count(t, s, "alice", "SELECT count(*) FROM steps"))
		r := currentReplica(s, "alice")
		return r != nil && r != first
	}, 60*time.Second, time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.owners["alice"].rep
	t.Logf("replica %d MB → %d MB after %s", before>>20, r.bytes>>20, time.Since(start).Round(time.Millisecond))
	require.Less(t, r.bytes, before/2)
	require.Equal(t, r.bytes, s.replicaBytes)
}

// Changes that arrive while the compressed copy is being built are followed
// by the serving replica and applied to the copy before it takes over: the
// copy replaces the replica (compression is not lost to a busy owner), and
// every change stays visible, without a rebuild.
func TestReplicaCompressionKeepsUpWithChanges(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	ctx := context.Background()
	loadSteps(t, s, "alice", 200_000)
	builds := s.ReplicaBuilds()
	require.EqualValues(t, 200_000, count(t, s, "alice", "SELECT count(*) FROM steps"))
	first := currentReplica(s, "alice")
	require.NotNil(t, first)
	for i := range 5 {
		id := fmt.Sprintf("a%d", i)
		_, err := s.Apply(ctx, "alice", "ann-"+id, func(tx *Tx) error {
			tx.TouchAnnotation(id)
			return tx.UpsertAnnotation(ctx, AnnotationRow{ID: id, TraceID: "t1", Rating: new(1), CreatedAt: t0})
		})
		require.NoError(t, err)
		require.EqualValues(t, i+1, count(t, s, "alice", "SELECT count(*) FROM annotations"), "the change is visible at once")
	}
	require.Eventually(t, func() bool {
		r := currentReplica(s, "alice")
		return r != nil && r != first
	}, 60*time.Second, 5*time.Millisecond, "the compressed copy never replaced the replica")
	require.EqualValues(t, 5, count(t, s, "alice", "SELECT count(*) FROM annotations"))
	require.EqualValues(t, 200_000, count(t, s, "alice", "SELECT count(*) FROM steps"))
	require.Equal(t, builds+2, s.ReplicaBuilds(), "the first query's replica and its compressed copy, no rebuild")
	s.mu.Lock()
	r := s.owners["alice"].rep
	require.Less(t, r.bytes, first.bytes/2)
	s.mu.Unlock()
}
