package readmodel_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

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

// sealedLog is a sealed event log (every trace under its own key, so an
// erased trace's events stop opening) and the way to start an API process
// on it: each has its own store, keyring and commands, as separate
// processes do.
func sealedLog(t *testing.T) func(opts ...commands.Option) (*eventstore.Store, *commands.Commands) {
	t.Helper()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	master := make([]byte, keyring.KeySize)
	_, _ = rand.Read(master)
	return func(opts ...commands.Option) (*eventstore.Store, *commands.Commands) {
		ring, err := keyring.New(pool, master)
		require.NoError(t, err)
		store := eventstore.New(pool, blobs, eventstore.WithKeyring(ring))
		return store, commands.New(store, opts...)
	}
}

// TestLiveExportsFromSeveralProcesses: API processes take turns receiving
// one agent run's spans (two keep what they folded of the conversation
// between exports, one keeps nothing), so each export must start from what
// the others appended; the trace stored after every export is the one
// rebuilt from all its spans, the spans stored are the ones sent.
func TestLiveExportsFromSeveralProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	process := sealedLog(t)
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

// TestErasedTraceStaysErased: an erased trace's id is never written again
// (its key is never made again), and sending it again fails nothing else:
// an import leaves it out and names it, the rest imported; a live export
// rejects its spans alone (partial success), the request's other trace
// stored; new calls of an erased session are rejected too.
func TestErasedTraceStaysErased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, cmds := sealedLog(t)()
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "erased-stays"})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}

	// An import of two traces; one is deleted, then the file comes again.
	file := []byte(`{"id":"a","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"r"}]}` + "\n" +
		`{"id":"b","steps":[{"role":"user","content":"q2"},{"role":"assistant","content":"r2"}]}`)
	imp := func(data []byte) commands.ImportResult {
		t.Helper()
		r, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: data}})
		require.NoError(t, err)
		return r
	}
	first := imp(file)
	a, b := commands.TraceIDFor(u.UserID, "a"), commands.TraceIDFor(u.UserID, "b")
	require.Equal(t, []string{a, b}, first.TraceIDs)
	_, err = cmds.DeleteTrace.Handle(ctx, commands.DeleteTrace{Actor: actor, TraceID: a})
	require.NoError(t, err)
	again := imp(append(file, []byte("\n"+`{"id":"b","steps":[{"role":"user","content":"q2"},{"role":"assistant","content":"r2, revised"}]}`)...))
	require.Equal(t, []string{b}, again.TraceIDs, "b imported, a left out")
	require.Equal(t, []string{a}, again.Erased)
	require.NotEmpty(t, again.LastEventID, "b's revision was stored")
	only := imp(file[:len(`{"id":"a","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"r"}]}`)])
	require.Empty(t, only.TraceIDs)
	require.Equal(t, []string{a}, only.Erased)

	// A live trace, erased, then its spans again beside another trace's.
	send := func(spans ...ptrace.Span) commands.OTelReceipt {
		t.Helper()
		var raws []formats.RawSpan
		for _, sp := range spans {
			r, err := otlp.SplitPData(oneSpan(sp))
			require.NoError(t, err)
			raws = append(raws, r...)
		}
		receipt, err := cmds.ReceiveOTelSpans.Handle(ctx, commands.ReceiveOTelSpans{Actor: actor, Spans: raws})
		require.NoError(t, err)
		return receipt
	}
	send(agentSpan(0))
	send(agentSpan(1))
	var hexID pcommon.TraceID
	copy(hexID[:], "live-spans-trace")
	live := commands.TraceIDFor(u.UserID, hexID.String())
	_, err = cmds.DeleteTrace.Handle(ctx, commands.DeleteTrace{Actor: actor, TraceID: live})
	require.NoError(t, err)
	other := agentSpan(0)
	var otherID pcommon.TraceID
	copy(otherID[:], "another-trace-id")
	other.SetTraceID(otherID)
	receipt := send(agentSpan(2), other)
	require.Equal(t, int64(1), receipt.RejectedSpans, "the erased trace's span alone")
	require.Contains(t, receipt.ErrorMessage, "trace "+live+" was erased")
	require.NotEmpty(t, receipt.LastEventID, "the other trace was stored")
	st := foldTrace(t, ctx, store, commands.TraceIDFor(u.UserID, otherID.String()))
	require.True(t, st.Exists)

	// A named session's conversation erased: its next call is rejected.
	session := func(c int) ptrace.Span {
		sp := agentSpan(c)
		var tid pcommon.TraceID
		copy(tid[:], fmt.Sprintf("session-call-%03d", c))
		sp.SetTraceID(tid)
		sp.SetParentSpanID(pcommon.SpanID{})
		sp.Attributes().PutStr("gen_ai.conversation.id", "chat-42")
		return sp
	}
	require.Empty(t, send(session(0)).ErrorMessage)
	conv := commands.TraceIDFor(u.UserID, "session:chat-42")
	require.True(t, foldTrace(t, ctx, store, conv).Exists)
	_, err = cmds.DeleteTrace.Handle(ctx, commands.DeleteTrace{Actor: actor, TraceID: conv})
	require.NoError(t, err)
	receipt = send(session(1))
	require.Equal(t, int64(1), receipt.RejectedSpans)
	require.Contains(t, receipt.ErrorMessage, "trace "+conv+" was erased")
}

// foldTrace is a trace's state as its stream says now.
func foldTrace(t *testing.T, ctx context.Context, store *eventstore.Store, traceID string) traces.State {
	t.Helper()
	loaded, err := store.LoadStreams(ctx, []string{events.TraceStream(traceID)})
	require.NoError(t, err)
	st, err := traces.Fold(traceID, loaded[events.TraceStream(traceID)])
	require.NoError(t, err)
	return st
}
