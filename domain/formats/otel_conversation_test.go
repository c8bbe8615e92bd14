package formats

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rootlessCall is one client-only LLM call: its own trace, one parentless
// span with GenAI messages.
func rootlessCall(t *testing.T, service string, start int64, attrs map[string]any, in []any, out ...any) []RawSpan {
	t.Helper()
	ib, _ := json.Marshal(in)
	ob, _ := json.Marshal(out)
	a := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.input.messages": string(ib), "gen_ai.output.messages": string(ob)}
	maps.Copy(a, attrs)
	var list []any
	for k, v := range a {
		list = append(list, map[string]any{"key": k, "value": map[string]any{"stringValue": v}})
	}
	b, err := json.Marshal(map[string]any{"resourceSpans": []any{map[string]any{
		"resource": map[string]any{"attributes": []any{map[string]any{"key": "service.name", "value": map[string]any{"stringValue": service}}}},
		"scopeSpans": []any{map[string]any{"spans": []any{map[string]any{"traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "0000000000000001",
			"name": "chat", "startTimeUnixNano": start, "endTimeUnixNano": start + 1000, "attributes": list}}}},
	}}})
	require.NoError(t, err)
	return []RawSpan{{TraceID: "0102030405060708090a0b0c0d0e0f10", SpanID: "0000000000000001", JSON: b}}
}

func msg(role, text string) map[string]any {
	return map[string]any{"role": role, "parts": []any{map[string]any{"type": "text", "content": text}}}
}

// TestThreadOfRootlessCalls: the calls of one conversation share an opening
// key and each continues the conversation so far; another conversation of
// the same service has another key; a call that does not extend the
// conversation, or comes after the window, does not continue it; a session
// id names the conversation whatever the shape.
func TestThreadOfRootlessCalls(t *testing.T) {
	sys, q, a := msg("system", "Be brief."), msg("user", "Capital of France?"), msg("assistant", "Paris.")
	q2, a2 := msg("user", "And Italy?"), msg("assistant", "Rome.")
	first := rootlessCall(t, "bot", otelT0, nil, []any{sys, q}, a)
	second := rootlessCall(t, "bot", otelT0+otelS, nil, []any{sys, q, a, q2}, a2)
	t1, t2 := ThreadOf(first), ThreadOf(second)
	require.NotEmpty(t, t1.Opening)
	require.Equal(t, t1.Opening, t2.Opening, "a later call re-sends the opening")
	require.Empty(t, t1.Conversation)

	conv, err := ConversationOf(first, "x", nil)
	require.NoError(t, err)
	require.True(t, t2.Continues(conv), "the input strictly extends the conversation")
	require.False(t, ThreadOf(rootlessCall(t, "bot", otelT0+otelS, nil, []any{sys, q}, msg("assistant", "Lyon?"))).Continues(conv),
		"same opening question, a different history: not an extension")
	require.False(t, ThreadOf(rootlessCall(t, "bot", otelT0+otelS, nil, []any{sys, q, msg("assistant", "Lyon."), q2}, a2)).Continues(conv))
	late := rootlessCall(t, "bot", otelT0+int64(ConversationWindow)+int64(time.Minute), nil, []any{sys, q, a, q2}, a2)
	require.False(t, ThreadOf(late).Continues(conv), "after the window: a conversation of its own")

	both, err := ConversationOf(append(append([]RawSpan(nil), first...), RawSpan{TraceID: "x", SpanID: "0000000000000002", JSON: rewriteIDs(t, second[0].JSON)}), "x", nil)
	require.NoError(t, err)
	require.True(t, t1.Continues(both), "an earlier call arriving late is a prefix of the conversation")

	require.NotEqual(t, t1.Opening, ThreadOf(rootlessCall(t, "bot", otelT0, nil, []any{sys, msg("user", "Capital of Spain?")}, msg("assistant", "Madrid."))).Opening,
		"another conversation of the same service")
	require.NotEqual(t, t1.Opening, ThreadOf(rootlessCall(t, "other", otelT0, nil, []any{sys, q}, a)).Opening, "another service")

	s := ThreadOf(rootlessCall(t, "bot", otelT0, map[string]any{"session.id": "s-1"}, []any{q}, a))
	require.Equal(t, "s-1", s.Conversation)
	require.Equal(t, "c-9", ThreadOf(rootlessCall(t, "bot", otelT0, map[string]any{"gen_ai.conversation.id": "c-9", "session.id": "s-1"}, []any{q}, a)).Conversation)
}

// rewriteIDs gives a call's span another trace and span id, as the next
// call of client-only instrumentation has.
func rewriteIDs(t *testing.T, b []byte) []byte {
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v))
	sp := v["resourceSpans"].([]any)[0].(map[string]any)["scopeSpans"].([]any)[0].(map[string]any)["spans"].([]any)[0].(map[string]any)
	sp["traceId"], sp["spanId"] = "1102030405060708090a0b0c0d0e0f10", "0000000000000002"
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return out
}

// A rooted trace (a span with a parent) is never filed by its session: its
// spans arrive in several requests and only some carry the attribute.
func TestThreadOfRootedTraceIsItsOwn(t *testing.T) {
	call := rootlessCall(t, "bot", otelT0, map[string]any{"session.id": "s-1"}, []any{msg("user", "Hi")}, msg("assistant", "Hello"))
	var v map[string]any
	require.NoError(t, json.Unmarshal(call[0].JSON, &v))
	v["resourceSpans"].([]any)[0].(map[string]any)["scopeSpans"].([]any)[0].(map[string]any)["spans"].([]any)[0].(map[string]any)["parentSpanId"] = "00000000000000ff"
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.Equal(t, Thread{}, ThreadOf([]RawSpan{{TraceID: call[0].TraceID, SpanID: call[0].SpanID, JSON: b}}))
}

// A rooted trace's root span arriving alone (an agent span naming the
// session, no LLM call) stays with its trace.
func TestThreadOfLoneRootSpanIsItsOwn(t *testing.T) {
	b, err := json.Marshal(map[string]any{"resourceSpans": []any{map[string]any{
		"scopeSpans": []any{map[string]any{"spans": []any{map[string]any{"traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "0000000000000001",
			"name": "invoke_agent", "startTimeUnixNano": otelT0, "endTimeUnixNano": otelT0 + 1000, "attributes": []any{
				map[string]any{"key": "gen_ai.operation.name", "value": map[string]any{"stringValue": "invoke_agent"}},
				map[string]any{"key": "gen_ai.conversation.id", "value": map[string]any{"stringValue": "conv-1"}}}}}}},
	}}})
	require.NoError(t, err)
	require.Equal(t, Thread{}, ThreadOf([]RawSpan{{TraceID: "0102030405060708090a0b0c0d0e0f10", SpanID: "0000000000000001", JSON: b}}))
}

// TestOTelFileJoinsRootlessCalls: an OTLP file export of client-only
// instrumentation (one trace per call, each re-sending the history) imports
// as the live receiver files it: the calls of one conversation become one
// trace named by its first call, another conversation of the same service
// stays apart, and calls naming a session join under it.
func TestOTelFileJoinsRootlessCalls(t *testing.T) {
	sys, q, a := msg("system", "Be brief."), msg("user", "Capital of France?"), msg("assistant", "Paris.")
	q2, a2 := msg("user", "And Italy?"), msg("assistant", "Rome.")
	withIDs := func(raw []RawSpan, trace string) string {
		var v map[string]any
		require.NoError(t, json.Unmarshal(raw[0].JSON, &v))
		sp := v["resourceSpans"].([]any)[0].(map[string]any)["scopeSpans"].([]any)[0].(map[string]any)["spans"].([]any)[0].(map[string]any)
		sp["traceId"], sp["spanId"] = trace, trace[16:]
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b)
	}
	lines := []string{
		withIDs(rootlessCall(t, "bot", otelT0, nil, []any{sys, q}, a), "0000000000000000000000000000000a"),
		withIDs(rootlessCall(t, "bot", otelT0+otelS, nil, []any{sys, msg("user", "Capital of Spain?")}, msg("assistant", "Madrid.")), "0000000000000000000000000000000b"),
		withIDs(rootlessCall(t, "bot", otelT0+2*otelS, nil, []any{sys, q, a, q2}, a2), "0000000000000000000000000000000c"),
		withIDs(rootlessCall(t, "bot", otelT0+3*otelS, map[string]any{"session.id": "s-7"}, []any{msg("user", "Hi")}, msg("assistant", "Hello.")), "0000000000000000000000000000000d"),
		withIDs(rootlessCall(t, "bot", otelT0+4*otelS, map[string]any{"session.id": "s-7"}, []any{msg("user", "Hi"), msg("assistant", "Hello."), msg("user", "Bye")}, msg("assistant", "Bye.")), "0000000000000000000000000000000e"),
	}
	traces, err := OTel{}.Parse([]byte(lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\n" + lines[3] + "\n" + lines[4] + "\n"))
	require.NoError(t, err)
	var got []string
	for _, tr := range traces {
		var contents []string
		for _, s := range tr.Steps {
			contents = append(contents, string(s.Role)+":"+s.Content)
		}
		got = append(got, tr.ExternalID+" "+strings.Join(contents, " | "))
	}
	require.Equal(t, []string{
		"0000000000000000000000000000000a system:Be brief. | user:Capital of France? | assistant:Paris. | user:And Italy? | assistant:Rome.",
		"0000000000000000000000000000000b system:Be brief. | user:Capital of Spain? | assistant:Madrid.",
		"session:s-7 user:Hi | assistant:Hello. | user:Bye | assistant:Bye.",
	}, got)
}
