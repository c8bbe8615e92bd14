package readmodel_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/readmodel"
)

// TestReimportWithSomeTracesUnchanged: a file imported again in which one
// trace changed and another did not (a sync's next export) revises the one
// and leaves the other — it used to fail after 10 s with "being written by
// many requests at once", every time.
func TestReimportWithSomeTracesUnchanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, _, cmds := newLog(t)
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "resync"})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	imp := func(b string) commands.ImportResult {
		t.Helper()
		r, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
			`{"id":"a","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"r"}]}` + "\n" +
				`{"id":"b","steps":[{"role":"user","content":"q2"},{"role":"assistant","content":"` + b + `"}]}`)}})
		require.NoError(t, err)
		return r
	}
	first := imp("r2")
	again := imp("r2, revised")
	require.Equal(t, first.TraceIDs, again.TraceIDs)
	require.Equal(t, 1, again.Unchanged, "a as it was")
	require.NotEmpty(t, again.LastEventID, "b revised")
}

// TestDuplicateDeliveryChangesNothing applies the same events twice — across
// batches and within one — and requires identical tables.
func TestDuplicateDeliveryChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, blobs, store, cmds := newLog(t)
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "dup"})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	imp, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"a","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"r"}]}` + "\n" +
			`{"steps":[{"role":"user","content":"q2"}]}`)}})
	require.NoError(t, err)
	_, err = cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"a","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"better"}]}`)}})
	require.NoError(t, err)
	_, err = cmds.DeleteTrace.Handle(ctx, commands.DeleteTrace{Actor: actor, TraceID: imp.TraceIDs[1]})
	require.NoError(t, err)

	all, err := store.ReadAfter(ctx, 0, 1000)
	require.NoError(t, err)
	p := readmodel.New(pool, blobs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, p.Apply(ctx, all))
	first := dump(t, ctx, pool)
	require.NoError(t, p.Apply(ctx, all))
	require.NoError(t, p.Apply(ctx, append(all[2:4:4], all...)))
	require.Equal(t, first, dump(t, ctx, pool))

	q := readmodel.NewQueries(pool)
	d, err := q.GetTrace(ctx, u.UserID, imp.TraceIDs[0])
	require.NoError(t, err)
	require.Len(t, d.Steps, 2)
	require.Equal(t, "better", d.Steps[1].Content)
	_, err = q.GetTrace(ctx, u.UserID, imp.TraceIDs[1])
	require.Error(t, err)
	_, err = q.GetTrace(ctx, uuid.NewString(), imp.TraceIDs[0])
	require.Error(t, err, "another owner does not see it")

	// Replay from the log yields the same tables.
	n, err := p.Replay(ctx, store)
	require.NoError(t, err)
	require.Equal(t, len(all), n)
	require.Equal(t, first, dump(t, ctx, pool))
}

// dump renders every read-model table, ordered, as text.
func dump(t *testing.T, ctx context.Context, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, table := range readmodel.Tables {
		var s *string
		require.NoError(t, pool.QueryRow(ctx, "SELECT string_agg(x::text, E'\\n' ORDER BY x::text) FROM "+table+" x").Scan(&s))
		if s != nil {
			out[table] = *s
		}
	}
	require.NotEmpty(t, out["rm_steps"])
	return out
}

// newLog is a fresh database, an event store over it (blobs in a temporary
// directory) and the command side writing to it: what each read-model test
// starts from.
func newLog(t *testing.T) (*pgxpool.Pool, *blob.Local, *eventstore.Store, *commands.Commands) {
	t.Helper()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	return pool, blobs, store, commands.New(store)
}
