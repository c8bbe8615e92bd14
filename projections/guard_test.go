package projections_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/platform/relay"
	"github.com/criticml/critic/projections"
	"github.com/criticml/critic/projections/readmodel"
)

// TestGuardParksOneOwnerAndCatchesUpOnRetry feeds one mixed batch, as the
// bus delivers it, to the read model behind its guard: one owner's event
// cannot be applied (its claim-checked payload is gone). Everyone else's
// events are applied, that owner's later ones are held, the API's waiter
// says why at once, and an operator retry after the fix applies the parked
// event and the held one, in order. A corrupt copy of an event on the bus
// is read from the log instead.
func TestGuardParksOneOwnerAndCatchesUpOnRetry(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	dir := t.TempDir()
	blobs, err := blob.NewLocal(dir)
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	cmds := commands.New(store)
	alice, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "alice"})
	require.NoError(t, err)
	bob, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "bob"})
	require.NoError(t, err)
	imp := func(u string, ext string) string {
		r, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: commands.Actor{UserID: u}, Input: commands.ImportTracesInput{Format: "stash",
			Data: []byte(`{"id":"` + ext + `","steps":[{"role":"user","content":"` + ext + `"}]}`)}})
		require.NoError(t, err)
		return r.LastEventID
	}
	imp(alice.UserID, "a1")
	// Alice's broken import: a claim check whose blob is missing.
	badID, traceID := uuid.Must(uuid.NewV7()).String(), uuid.NewString()
	payload, _ := json.Marshal(map[string]any{"trace_id": traceID, "title": "lost", "source_format": "stash", "revision": 1,
		"steps": []any{map[string]any{"id": uuid.NewString(), "index": 0, "role": "user", "content": "lost"}}})
	sum := sha256.Sum256(payload)
	key := "events/" + badID + ".json"
	cc, _ := json.Marshal(map[string]any{"claim_check": map[string]any{"key": key, "sha256": hex.EncodeToString(sum[:]), "size": len(payload)}})
	_, err = pool.Exec(ctx, `INSERT INTO events (id, stream, version, owner_id, type, actor, payload) VALUES ($1, $2, 1, $3, 'trace.imported.v1', 'system', $4)`,
		badID, "trace/"+traceID, alice.UserID, string(cc))
	require.NoError(t, err)
	imp(bob.UserID, "b1")
	heldID := imp(alice.UserID, "a3")
	corruptID := imp(bob.UserID, "b2")

	all, err := store.ReadAfter(ctx, 0, 1000)
	require.NoError(t, err)
	var batch []*message.Message
	for _, e := range all {
		m, err := relay.Message(e)
		require.NoError(t, err)
		if e.ID == corruptID {
			m.Payload = m.Payload[:len(m.Payload)/2] // a torn copy on the bus
		}
		batch = append(batch, m)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := projections.NewGuard(readmodel.Name, pool, store, readmodel.New(pool, blobs, log), log,
		projections.GuardOptions{Tries: 2, Backoff: time.Millisecond, Poll: time.Hour})
	require.NoError(t, g.Handle(ctx, batch))

	titles := func(owner string) []string {
		rows, err := pool.Query(ctx, `SELECT external_id FROM rm_traces WHERE owner_id = $1 ORDER BY import_seq`, owner)
		require.NoError(t, err)
		var out []string
		for rows.Next() {
			var s *string
			require.NoError(t, rows.Scan(&s))
			if s == nil {
				out = append(out, "(none)")
			} else {
				out = append(out, *s)
			}
		}
		return out
	}
	require.Equal(t, []string{"b1", "b2"}, titles(bob.UserID), "the other owner's events, the torn one read from the log")
	require.Equal(t, []string{"a1"}, titles(alice.UserID), "the parked event and the owner's later one are held")
	pos, parked, err := projections.Status(ctx, pool)
	require.NoError(t, err)
	require.Len(t, parked, 1)
	require.Equal(t, badID, parked[0].EventID)
	require.Equal(t, alice.UserID, parked[0].OwnerID)
	require.Equal(t, 2, parked[0].Attempts)
	require.Contains(t, parked[0].Error, "claim-checked payload")
	require.Len(t, pos, 1)
	require.Equal(t, all[len(all)-1].Seq, pos[0].Seq)
	require.Zero(t, pos[0].Lag)

	w := readmodel.NewWaiter(pool, time.Minute)
	var pe *domain.ProjectionParkedError
	require.ErrorAs(t, w.Wait(ctx, heldID), &pe, "the held write is answered at once")
	require.Equal(t, badID, pe.EventID)

	// Retrying before the fix parks it again; after it, everything flows.
	n, err := projections.RequestRetry(ctx, pool, badID)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.NoError(t, g.RetryRequested(ctx))
	_, parked, err = projections.Status(ctx, pool)
	require.NoError(t, err)
	require.Len(t, parked, 1)
	require.Equal(t, 3, parked[0].Attempts)
	require.False(t, parked[0].RetryRequested)

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "events"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.FromSlash(key)), payload, 0o644))
	_, err = projections.RequestRetry(ctx, pool, badID)
	require.NoError(t, err)
	require.NoError(t, g.RetryRequested(ctx))
	require.Equal(t, []string{"a1", "(none)", "a3"}, titles(alice.UserID), "the parked event, then the held one")
	_, parked, err = projections.Status(ctx, pool)
	require.NoError(t, err)
	require.Empty(t, parked)
	require.NoError(t, w.Wait(ctx, heldID))

	// Redelivery of the whole batch changes nothing.
	require.NoError(t, g.Handle(ctx, batch))
	require.Equal(t, []string{"a1", "(none)", "a3"}, titles(alice.UserID))
	require.Equal(t, []string{"b1", "b2"}, titles(bob.UserID))
}
