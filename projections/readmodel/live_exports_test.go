package readmodel_test

import (
	"context"
	"crypto/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/handlers/otlp"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/keyring"
	"github.com/criticml/critic/platform/pg/pgtest"
)

// TestLiveExportsFromSeveralProcesses: API processes take turns receiving
// one agent run's spans (two keep what they folded of the conversation
// between exports, one keeps nothing), so each export must start from what
// the others appended; the trace stored after every export is the one
// rebuilt from all its spans, the spans stored are the ones sent.
func TestLiveExportsFromSeveralProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	master := make([]byte, keyring.KeySize)
	_, _ = rand.Read(master)
	process := func(opts ...commands.Option) (*eventstore.Store, *commands.Commands) {
		ring, err := keyring.New(pool, master)
		require.NoError(t, err)
		store := eventstore.New(pool, blobs, eventstore.WithKeyring(ring))
		return store, commands.New(store, opts...)
	}
	store, a := process()
	_, b := process()
	_, c := process(commands.WithOTLPCache(0)) // keeps nothing between exports
	u, err := a.CreateUser.Handle(ctx, commands.CreateUser{Name: "two-processes"})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	var hexID pcommon.TraceID
	copy(hexID[:], "live-spans-trace")
	traceID := commands.TraceIDFor(u.UserID, hexID.String())

	var sent []formats.RawSpan
	send := func(via *commands.Commands, c int) {
		t.Helper()
		raws, err := otlp.SplitPData(oneSpan(agentSpan(c)))
		require.NoError(t, err)
		_, err = via.ReceiveOTelSpans.Handle(ctx, commands.ReceiveOTelSpans{Actor: actor, Spans: raws})
		require.NoError(t, err)
		sent = append(sent, raws...)
		want, _, err := formats.RebuildTrace(sent)
		require.NoError(t, err)
		loaded, err := store.LoadStreams(ctx, []string{events.TraceStream(traceID)})
		require.NoError(t, err)
		st, err := traces.Fold(traceID, loaded[events.TraceStream(traceID)])
		require.NoError(t, err)
		require.True(t, st.Exists)
		var steps []domain.Step
		for _, r := range st.Steps {
			steps = append(steps, r.Step)
		}
		require.Equal(t, want.Steps, steps, "after chat %d", c)
		ids := slices.Sorted(func(yield func(string) bool) {
			for id := range st.OTelSpans {
				if !yield(id) {
					return
				}
			}
		})
		var wantIDs []string
		for _, r := range sent {
			wantIDs = append(wantIDs, r.SpanID)
		}
		slices.Sort(wantIDs)
		require.Equal(t, wantIDs, ids, "after chat %d: the stored spans are the ones sent", c)
	}
	send(a, 0)
	send(a, 1)
	send(b, 2)
	send(a, 3)
	send(b, 4) // b holds the run folded at the stream's head

	send(c, 5)
	send(a, 6)
	send(a, -1) // the root span, last: the tree is reordered
	send(b, 7)
	send(c, 8)
}
