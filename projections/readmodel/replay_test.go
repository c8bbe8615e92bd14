package readmodel_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/readmodel"
)

// TestReplayDoesNotBlockReaders replays a log of 100,000 events while a
// reader keeps asking for a trace. The old replay truncated every table in
// its one transaction, so every read waited for the whole replay; now the
// rebuild happens beside the live tables and only the swap is exclusive.
// Writes applied by the live projection meanwhile reach the new tables.
func TestReplayDoesNotBlockReaders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a log of 100,000 events")
	}
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	u, err := commands.New(store).CreateUser.Handle(ctx, commands.CreateUser{Name: "reader"})
	require.NoError(t, err)
	// 100,000 one-step imports, written by SQL: the test is about the replay.
	_, err = pool.Exec(ctx, `INSERT INTO events (id, stream, version, owner_id, type, actor, payload)
		SELECT gen_random_uuid(), 'trace/' || t, 1, $1, 'trace.imported.v1', 'system',
			jsonb_build_object('trace_id', t, 'title', 'trace ' || i, 'source_format', 'stash', 'revision', 1,
				'steps', jsonb_build_array(jsonb_build_object('id', gen_random_uuid(), 'index', 0, 'role', 'user', 'content', 'hello ' || i)))
		FROM (SELECT i, gen_random_uuid() AS t FROM generate_series(1, 99998) i) s`, u.UserID)
	require.NoError(t, err)
	total, err := store.Count(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, total, int64(100_000))

	p := readmodel.New(pool, blobs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for after := int64(0); ; {
		batch, err := store.ReadAfter(ctx, after, 5000)
		require.NoError(t, err)
		if len(batch) == 0 {
			break
		}
		require.NoError(t, p.Apply(ctx, batch))
		after = batch[len(batch)-1].Seq
	}
	var traceID string
	require.NoError(t, pool.QueryRow(ctx, "SELECT id::text FROM rm_traces ORDER BY import_seq LIMIT 1").Scan(&traceID))
	before := dump(t, ctx, pool)

	q := readmodel.NewQueries(pool)
	var during, readErrs atomic.Int64
	done := make(chan struct{})
	replayed := make(chan error, 1)
	go func() {
		n, err := p.Replay(ctx, store)
		if err == nil && int64(n) < total {
			err = context.DeadlineExceeded
		}
		close(done)
		replayed <- err
	}()
	// Meanwhile the live projection keeps applying new writes; the swap
	// must carry every one of them into the rebuilt tables.
	cmds := commands.New(store)
	var written []string
	writing := make(chan struct{})
	go func() {
		defer close(writing)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			r, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: commands.Actor{UserID: u.UserID}, Input: commands.ImportTracesInput{Format: "stash",
				Data: []byte(fmt.Sprintf(`{"id":"during-%d","steps":[{"role":"user","content":"written during the replay"}]}`, i))}})
			if err != nil {
				readErrs.Add(1)
				return
			}
			evs, err := store.ReadAfter(ctx, total+int64(i), 10)
			if err == nil {
				err = p.Apply(ctx, evs)
			}
			if err != nil {
				readErrs.Add(1)
				return
			}
			written = append(written, r.TraceIDs[0])
		}
	}()
	reading := make(chan struct{})
	go func() {
		defer close(reading)
		for {
			select {
			case <-done:
				return
			default:
			}
			d, err := q.GetTrace(ctx, u.UserID, traceID)
			select {
			case <-done: // answered, but perhaps only after the replay ended
				return
			default:
			}
			if err != nil || len(d.Steps) != 1 {
				t.Logf("read during replay: %v", err)
				readErrs.Add(1)
				continue
			}
			during.Add(1)
		}
	}()
	require.NoError(t, <-replayed)
	<-reading
	<-writing
	require.Zero(t, readErrs.Load(), "every read during the replay found the trace, every write was applied")
	require.Greater(t, during.Load(), int64(100), "reads answered while the replay ran")
	t.Logf("%d reads answered and %d traces written during the replay of %d events", during.Load(), len(written), total)

	require.NotEmpty(t, written)
	for _, id := range written {
		d, err := q.GetTrace(ctx, u.UserID, id)
		require.NoError(t, err, "a trace written during the replay is in the swapped-in tables")
		require.Len(t, d.Steps, 1)
	}
	// The rebuilt tables equal what the live projection would hold: the
	// earlier tables plus what was written meanwhile, which a second
	// replay (nothing written during it) must reproduce exactly.
	after := dump(t, ctx, pool)
	require.Len(t, strings.Split(after["rm_traces"], "\n"), len(strings.Split(before["rm_traces"], "\n"))+len(written))
	_, err = p.Replay(ctx, store)
	require.NoError(t, err)
	require.Equal(t, after, dump(t, ctx, pool), "the rebuilt read model equals the live one")
	d, err := q.GetTrace(ctx, u.UserID, traceID)
	require.NoError(t, err, "reads work on the swapped-in tables")
	require.Len(t, d.Steps, 1)
	var schemas int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = 'rm_rebuild'").Scan(&schemas))
	require.Zero(t, schemas, "the build schema is gone")
}
