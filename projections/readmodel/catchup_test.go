package readmodel_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/platform/logtest"
	"github.com/criticml/critic/projections/readmodel"
)

// TestWaitCatchesUpWithoutTheConsumer is the failover case: the bus consumer
// of the writer's partition is gone (nothing consumes here at all), yet a
// write is answered as soon as the waiter applied the caller's events itself
// — every earlier unapplied one of that owner too, in order, and nothing of
// other owners — and the consumer delivering the same events later changes
// nothing. Without the catch-up the wait ends in 503 (UnavailableError).
func TestWaitCatchesUpWithoutTheConsumer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, blobs, store, cmds := newLog(t)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	p := readmodel.New(pool, blobs, log)

	alice, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "alice"})
	require.NoError(t, err)
	bob, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "bob"})
	require.NoError(t, err)
	// Everything so far reached the read model the usual way.
	all, err := store.ReadAfter(ctx, 0, 1000)
	require.NoError(t, err)
	require.NoError(t, p.Apply(ctx, all))

	// Then the consumer dies: alice writes twice, bob once.
	first, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: commands.Actor{UserID: alice.UserID}, Input: commands.ImportTracesInput{Format: "stash",
		Data: []byte(`{"id":"one","steps":[{"role":"user","content":"q1"}]}`)}})
	require.NoError(t, err)
	_, err = cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: commands.Actor{UserID: bob.UserID}, Input: commands.ImportTracesInput{Format: "stash",
		Data: []byte(`{"id":"b","steps":[{"role":"user","content":"qb"}]}`)}})
	require.NoError(t, err)
	second, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: commands.Actor{UserID: alice.UserID}, Input: commands.ImportTracesInput{Format: "stash",
		Data: []byte(`{"id":"two","steps":[{"role":"user","content":"q2"}]}`)}})
	require.NoError(t, err)

	plain := readmodel.NewWaiter(pool, 300*time.Millisecond)
	var una *domain.UnavailableError
	require.ErrorAs(t, plain.Wait(ctx, second.LastEventID), &una, "without a consumer a plain wait times out")

	w := readmodel.NewWaiter(pool, 30*time.Second).WithCatchUp(p, store, 50*time.Millisecond, log)
	require.NoError(t, w.Wait(ctx, second.LastEventID))

	q := readmodel.NewQueries(pool)
	for _, id := range append(first.TraceIDs, second.TraceIDs...) {
		_, err := q.GetTrace(ctx, alice.UserID, id)
		require.NoError(t, err, "alice's earlier write is applied too, before the later one")
	}
	var bobTraces int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM rm_traces WHERE owner_id = $1`, bob.UserID).Scan(&bobTraces))
	require.Zero(t, bobTraces, "another owner's events stay with their consumer")
	require.Contains(t, logs.String(), "read-model projection lagging")
	require.NotContains(t, logs.String(), "catch-up failed")

	// The consumer comes back and delivers everything again: no change.
	before := dump(t, ctx, pool)
	all, err = store.ReadAfter(ctx, 0, 1000)
	require.NoError(t, err)
	require.NoError(t, p.Apply(ctx, all[:len(all)-1]))
	after := dump(t, ctx, pool)
	require.NotEqual(t, before["rm_traces"], after["rm_traces"], "bob's trace arrives")
	require.NoError(t, p.Apply(ctx, all))
	require.Equal(t, after, dump(t, ctx, pool))
	n, err := p.Replay(ctx, store)
	require.NoError(t, err)
	require.Equal(t, len(all), n)
	require.Equal(t, after, dump(t, ctx, pool), "the caught-up read model equals a replay of the log")
}

// TestCatchUpLeavesHeldOwnersAlone: an owner held behind a parked event is
// not caught up (its later events must wait for the operator's retry), and
// the wait says so at once.
func TestCatchUpLeavesHeldOwnersAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, blobs, store, cmds := newLog(t)
	p := readmodel.New(pool, blobs, slog.New(slog.DiscardHandler))
	alice, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "alice"})
	require.NoError(t, err)
	imp, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: commands.Actor{UserID: alice.UserID}, Input: commands.ImportTracesInput{Format: "stash",
		Data: []byte(`{"id":"one","steps":[{"role":"user","content":"q1"}]}`)}})
	require.NoError(t, err)
	all, err := store.ReadAfter(ctx, 0, 1000)
	require.NoError(t, err)
	bad := all[len(all)-1]
	_, err = pool.Exec(ctx, `INSERT INTO projection_parked (projection, event_id, seq, owner_id, event_type, error, attempts)
		VALUES ($1, $2, $3, $4, $5, 'broken', 4)`, readmodel.Name, bad.ID, bad.Seq, bad.OwnerID, bad.Type)
	require.NoError(t, err)
	n, err := p.CatchUp(ctx, store, alice.UserID, bad.Seq)
	require.NoError(t, err)
	require.Zero(t, n)
	w := readmodel.NewWaiter(pool, 30*time.Second).WithCatchUp(p, store, time.Millisecond, nil)
	var pe *domain.ProjectionParkedError
	require.ErrorAs(t, w.Wait(ctx, imp.LastEventID), &pe)
}

// TestStandbyAppliesWhatNobodyWaitsFor: with no bus consumer at all, events
// no request waits for (here appended straight through the command side)
// still reach the read model, once they are older than the standby's
// threshold; a held owner's do not.
func TestStandbyAppliesWhatNobodyWaitsFor(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool, blobs, store, cmds := newLog(t)
	var logs logtest.Buffer
	p := readmodel.New(pool, blobs, slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.RunStandby(ctx, store, 100*time.Millisecond, 0, slog.New(slog.NewTextHandler(&logs, nil)))
	}()

	alice, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "alice"})
	require.NoError(t, err)
	bob, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "bob"})
	require.NoError(t, err)
	q := readmodel.NewQueries(pool)
	require.Eventually(t, func() bool {
		_, err1 := q.CallerByKeyHash(ctx, commands.HashAPIKey(alice.APIKey))
		_, err2 := q.CallerByKeyHash(ctx, commands.HashAPIKey(bob.APIKey))
		return err1 == nil && err2 == nil
	}, 30*time.Second, 50*time.Millisecond, "both users reach the read model with no consumer running")

	// Bob is held behind a parked event: his next write stays out.
	imp, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: commands.Actor{UserID: bob.UserID}, Input: commands.ImportTracesInput{Format: "stash",
		Data: []byte(`{"id":"one","steps":[{"role":"user","content":"q1"}]}`)}})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO projection_parked (projection, event_id, seq, owner_id, event_type, error, attempts)
		SELECT $1, id, seq, owner_id, type, 'broken', 4 FROM events WHERE id = $2`, readmodel.Name, imp.LastEventID)
	require.NoError(t, err)
	mine, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: commands.Actor{UserID: alice.UserID}, Input: commands.ImportTracesInput{Format: "stash",
		Data: []byte(`{"id":"one","steps":[{"role":"user","content":"q1"}]}`)}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := q.GetTrace(ctx, alice.UserID, mine.TraceIDs[0])
		return err == nil
	}, 30*time.Second, 50*time.Millisecond)
	_, err = q.GetTrace(ctx, bob.UserID, imp.TraceIDs[0])
	require.Error(t, err, "a held owner is left to the operator's retry")
	cancel()
	<-done
	require.Contains(t, logs.String(), "level=WARN msg=\"read-model projection lagging")
}
