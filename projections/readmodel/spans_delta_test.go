package readmodel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/handlers/otlp"
	"github.com/criticml/critic/projections/readmodel"
)

// TestLiveTraceSpansGrowByDelta sends an agent run to the live receiver a
// span at a time, as a SimpleSpanProcessor exports it: each chat span's
// input re-sends the conversation so far, and the root span ends (and so
// arrives) last though it starts first. Each revision while the run grows
// must carry only the new span, not the whole tree again; the root span's
// arrival reorders the tree, so that revision carries the root and the new
// order. The trace
// the API shows must be the one rebuilt from all the spans at once, after
// the live projection, a second delivery and a replay alike. A span re-sent
// with a changed input is revised alone, its input read again.
func TestLiveTraceSpansGrowByDelta(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, blobs, store, cmds := newLog(t)
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "live-spans"})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}

	const chats = 6
	var all []formats.RawSpan
	send := func(sp ptrace.Span) {
		raws, err := otlp.SplitPData(oneSpan(sp))
		require.NoError(t, err)
		_, err = cmds.ReceiveOTelSpans.Handle(ctx, commands.ReceiveOTelSpans{Actor: actor, Spans: raws})
		require.NoError(t, err)
		all = append(all, raws...)
	}
	for c := range chats {
		send(agentSpan(c))
	}
	send(agentSpan(-1))
	// Chat 3 re-sent with an input.value the SDK added (it is what the
	// span's input shows; the messages are unchanged): that span alone is
	// revised, its new input read from the new record.
	noted := agentSpan(3)
	noted.Attributes().PutStr("input.value", "lookup, with the customer's note")
	send(noted)

	var hexID pcommon.TraceID
	copy(hexID[:], "live-spans-trace")
	traceID := commands.TraceIDFor(u.UserID, hexID.String())
	stream, err := store.LoadStreams(ctx, []string{events.TraceStream(traceID)})
	require.NoError(t, err)
	var revisions []events.TraceRevisedV1
	for _, e := range stream[events.TraceStream(traceID)] {
		if e.Type == events.TraceRevised {
			var p events.TraceRevisedV1
			require.NoError(t, e.Decode(&p))
			revisions = append(revisions, p)
		}
	}
	require.Len(t, revisions, chats+1, "one revision per chat span after the first, one for the root, one for the re-sent span")
	for i, p := range revisions[:chats-1] {
		require.True(t, p.SpansDelta, "revision %d carries the whole tree", i)
		require.Len(t, p.Spans, 1, "revision %d: only the new chat span", i)
		require.Equal(t, chatSpanID(i+1).String(), p.Spans[0].ID)
	}
	root := revisions[chats-1]
	require.True(t, root.SpansDelta, "the root span starts first: the tree is reordered, not written again")
	require.Len(t, root.Spans, 1)
	require.Equal(t, chatSpanID(-1).String(), root.Spans[0].ID)
	require.Len(t, root.SpanOrder, chats+1)
	require.Equal(t, chatSpanID(-1).String(), root.SpanOrder[0], "the root first")
	resent := revisions[chats]
	require.True(t, resent.SpansDelta)
	require.Len(t, resent.Spans, 1)
	require.JSONEq(t, `"lookup, with the customer's note"`, string(resent.Spans[0].Input))

	latest := map[string]formats.RawSpan{} // the receiver keeps the last copy of each span
	var order []string
	for _, r := range all {
		if _, ok := latest[r.SpanID]; !ok {
			order = append(order, r.SpanID)
		}
		latest[r.SpanID] = r
	}
	var stored []formats.RawSpan
	for _, id := range order {
		stored = append(stored, latest[id])
	}
	want, _, err := formats.RebuildTrace(stored)
	require.NoError(t, err)
	p := readmodel.New(pool, blobs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	q := readmodel.NewQueries(pool)
	check := func(when string) {
		d, err := q.GetTrace(ctx, u.UserID, traceID)
		require.NoError(t, err, when)
		requireSameSpans(t, want.Spans, d.Spans, when)
	}
	evs, err := store.ReadAfter(ctx, 0, 1000)
	require.NoError(t, err)
	grown, _, err := formats.RebuildTrace(all[:chats])
	require.NoError(t, err)
	revised := 0
	for _, e := range evs { // one event at a time, as the live projection applies them
		require.NoError(t, p.Apply(ctx, []events.Envelope{e}))
		if e.Type == events.TraceRevised && e.Stream == events.TraceStream(traceID) {
			if revised++; revised == chats-1 {
				// While the run grows, the trace shows every span so far.
				d, err := q.GetTrace(ctx, u.UserID, traceID)
				require.NoError(t, err)
				requireSameSpans(t, grown.Spans, d.Spans, "before the root span")
			}
		}
	}
	check("applied live")
	first := dump(t, ctx, pool)
	require.NoError(t, p.Apply(ctx, evs))
	require.Equal(t, first, dump(t, ctx, pool), "a second delivery changes nothing")
	_, err = p.Replay(ctx, store)
	require.NoError(t, err)
	check("replayed")
	require.Equal(t, first, dump(t, ctx, pool))
}

// requireSameSpans compares span trees field by field, input and output as
// JSON values (the read model keeps them as jsonb).
func requireSameSpans(t *testing.T, want, got []domain.Span, when string) {
	t.Helper()
	require.Len(t, got, len(want), when)
	for i := range want {
		w, g := want[i], got[i]
		require.Equal(t, w.ID, g.ID, "%s: span %d", when, i)
		require.Equal(t, w.ParentID, g.ParentID, "%s: span %s", when, w.ID)
		require.Equal(t, w.StartNs, g.StartNs, "%s: span %s", when, w.ID)
		require.Equal(t, w.EndNs, g.EndNs, "%s: span %s", when, w.ID)
		require.Equal(t, w.StepIndices, g.StepIndices, "%s: span %s", when, w.ID)
		require.JSONEq(t, orNull(w.Input), orNull(g.Input), "%s: span %s", when, w.ID)
		require.JSONEq(t, orNull(w.Output), orNull(g.Output), "%s: span %s", when, w.ID)
	}
}

func orNull(r json.RawMessage) string {
	if len(r) == 0 {
		return "null"
	}
	return string(r)
}

func oneSpan(sp ptrace.Span) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "support-agent")
	sp.CopyTo(rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty())
	return td
}

func chatSpanID(c int) pcommon.SpanID {
	var id pcommon.SpanID
	copy(id[:], fmt.Sprintf("chat%04d", c))
	if c < 0 {
		copy(id[:], "rootspan")
	}
	return id
}

// agentSpan is chat call c of one agent run (its input the user's request
// and every earlier tool call with its result), or the run's root span (c
// -1), which starts before and ends after all of them.
func agentSpan(c int) ptrace.Span {
	sp := ptrace.NewSpan()
	var tid pcommon.TraceID
	copy(tid[:], "live-spans-trace")
	sp.SetTraceID(tid)
	sp.SetSpanID(chatSpanID(c))
	base := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC).UnixNano()
	if c < 0 {
		sp.SetName("invoke_agent support-agent")
		sp.SetStartTimestamp(pcommon.Timestamp(base))
		sp.SetEndTimestamp(pcommon.Timestamp(base + int64(time.Hour)))
		sp.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
		return sp
	}
	sp.SetParentSpanID(chatSpanID(-1))
	sp.SetName("chat gpt-4o")
	sp.SetKind(ptrace.SpanKindClient)
	t0 := base + int64(c+1)*int64(time.Second)
	sp.SetStartTimestamp(pcommon.Timestamp(t0))
	sp.SetEndTimestamp(pcommon.Timestamp(t0 + int64(500*time.Millisecond)))
	type msg struct {
		Role  string           `json:"role"`
		Parts []map[string]any `json:"parts"`
	}
	input := []msg{{Role: "user", Parts: []map[string]any{{"type": "text", "content": "My order <1042> & its refund, please"}}}}
	for j := range c {
		id := fmt.Sprintf("call_%d", j)
		input = append(input,
			msg{Role: "assistant", Parts: []map[string]any{{"type": "tool_call", "id": id, "name": "lookup_order", "arguments": map[string]any{"step": j}}}},
			msg{Role: "tool", Parts: []map[string]any{{"type": "tool_call_response", "id": id, "response": fmt.Sprintf(`{"status":"delivered","step":%d}`, j)}}})
	}
	output := []msg{{Role: "assistant", Parts: []map[string]any{{"type": "tool_call", "id": fmt.Sprintf("call_%d", c), "name": "lookup_order", "arguments": map[string]any{"step": c}}}}}
	in, _ := json.Marshal(input)
	out, _ := json.Marshal(output)
	a := sp.Attributes()
	a.PutStr("gen_ai.operation.name", "chat")
	a.PutStr("gen_ai.request.model", "gpt-4o")
	a.PutStr("gen_ai.input.messages", string(in))
	a.PutStr("gen_ai.output.messages", string(out))
	return sp
}
