package formats

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

// otelSpansReq builds an OTLP/JSON request of spans with string attributes.
func otelSpansReq(t *testing.T, service string, spans ...map[string]any) []byte {
	t.Helper()
	var list []any
	for i, s := range spans {
		var attrs []any
		for k, v := range s {
			attrs = append(attrs, map[string]any{"key": k, "value": map[string]any{"stringValue": v}})
		}
		list = append(list, map[string]any{"traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "00000000000000" + string(rune('a'+i)) + "1",
			"name": "call", "startTimeUnixNano": otelT0 + int64(i)*otelS, "endTimeUnixNano": otelT0 + int64(i)*otelS + 1000, "attributes": attrs})
	}
	b, err := json.Marshal(map[string]any{"resourceSpans": []any{map[string]any{
		"resource":   map[string]any{"attributes": []any{map[string]any{"key": "service.name", "value": map[string]any{"stringValue": service}}}},
		"scopeSpans": []any{map[string]any{"spans": list}},
	}}})
	require.NoError(t, err)
	return b
}

// TestOTelCallMetadataAndDialects: model and token usage per LLM call on the
// steps it produced, tool definitions on the trace, the Vercel AI SDK's
// functionId (v6) and gen_ai.agent.name (v7) giving the same agent, and no
// empty assistant step for a turn with neither text nor a tool call.
func TestOTelCallMetadataAndDialects(t *testing.T) {
	vercel := func(agentKey string) domain.Trace {
		data := otelSpansReq(t, "unknown_service:node",
			map[string]any{"ai.operationId": "ai.generateText.doGenerate", agentKey: "support-bot", "ai.model.id": "gpt-4o-mini",
				"ai.prompt.messages":    `[{"role":"user","content":[{"type":"text","text":"Hi"}]}]`,
				"ai.prompt.tools":       `["{\"type\":\"function\",\"name\":\"lookup\",\"parameters\":{\"type\":\"object\"}}"]`,
				"ai.response.text":      "Hello!",
				"ai.usage.inputTokens":  "7",
				"ai.usage.outputTokens": "2"},
			map[string]any{"ai.operationId": "ai.generateText.doGenerate", agentKey: "support-bot",
				"ai.prompt.messages": `[{"role":"user","content":[{"type":"text","text":"Hi"}]},{"role":"assistant","content":[{"type":"text","text":"Hello!"}]},{"role":"assistant","content":[]},{"role":"user","content":"Bye"}]`,
				"ai.response.text":   ""})
		ts, err := OTel{}.Parse(data)
		require.NoError(t, err)
		require.Len(t, ts, 1)
		return ts[0]
	}
	v6, v7 := vercel("ai.telemetry.functionId"), vercel("gen_ai.agent.name")
	require.Equal(t, "support-bot", v6.Metadata["agent"])
	require.Equal(t, v6.Metadata["agent"], v7.Metadata["agent"], "v6 and v7 give the same source")
	require.Equal(t, []any{map[string]any{"type": "function", "name": "lookup", "parameters": map[string]any{"type": "object"}}}, v6.Metadata["tools"])
	roles := []domain.Role{}
	for _, s := range v6.Steps {
		roles = append(roles, s.Role)
		require.False(t, s.Role == domain.RoleAssistant && s.Content == "" && s.ToolName == "", "no empty assistant step")
	}
	require.Equal(t, []domain.Role{domain.RoleUser, domain.RoleAssistant, domain.RoleUser}, roles)
	require.Equal(t, "gpt-4o-mini", v6.Steps[1].Metadata["model"])
	require.Equal(t, map[string]any{"input_tokens": int64(7), "output_tokens": int64(2), "total_tokens": int64(9)}, v6.Steps[1].Metadata["usage"])

	// Langfuse's OTel SDK: a generation observation's input/output, model
	// and usage_details; its wrapping span is not a call.
	ts, err := OTel{}.Parse(otelSpansReq(t, "app",
		map[string]any{"langfuse.observation.type": "span", "langfuse.observation.input": `"Sum 2+2"`, "langfuse.observation.output": `"4"`},
		map[string]any{"langfuse.observation.type": "generation", "langfuse.observation.model.name": "gpt-4o",
			"langfuse.observation.input":         `[{"role":"user","content":"Sum 2+2"}]`,
			"langfuse.observation.output":        `{"role":"assistant","content":"4"}`,
			"langfuse.observation.usage_details": `{"input":5,"output":1,"total":6,"cache_read_input_tokens":2}`}))
	require.NoError(t, err)
	require.Len(t, ts[0].Steps, 2)
	require.Equal(t, "4", ts[0].Steps[1].Content)
	require.Equal(t, "gpt-4o", ts[0].Steps[1].Metadata["model"])
	require.Equal(t, map[string]any{"input_tokens": int64(5), "output_tokens": int64(1), "total_tokens": int64(6), "cached_input_tokens": int64(2)},
		ts[0].Steps[1].Metadata["usage"])
}

// TestOTelSystemInstructionsMergeWithEvents: the span carries
// gen_ai.system_instructions, the messages come as log records; before, the
// span's attributes won alone and the trace was system-only.
func TestOTelSystemInstructionsMergeWithEvents(t *testing.T) {
	spans := otelSpansReq(t, "svc", map[string]any{"gen_ai.operation.name": "chat", "gen_ai.system_instructions": `[{"type":"text","content":"Be brief."}]`})
	logs := `{"resourceLogs":[{"scopeLogs":[{"logRecords":[` +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"00000000000000a1","eventName":"gen_ai.user.message","body":{"kvlistValue":{"values":[{"key":"content","value":{"stringValue":"Hi"}}]}}},` +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"00000000000000a1","eventName":"gen_ai.choice","body":{"kvlistValue":{"values":[{"key":"message","value":{"kvlistValue":{"values":[{"key":"content","value":{"stringValue":"Hello."}}]}}}]}}}]}]}]}`
	ts, err := OTel{}.Parse(append(append(spans, '\n'), []byte(logs)...))
	require.NoError(t, err)
	require.Equal(t, []domain.Role{domain.RoleSystem, domain.RoleUser, domain.RoleAssistant},
		[]domain.Role{ts[0].Steps[0].Role, ts[0].Steps[1].Role, ts[0].Steps[2].Role})
	require.Equal(t, "Be brief.", ts[0].Steps[0].Content)

	// Spans alone: system instructions only, nothing to review yet.
	var raws []RawSpan
	split, err := SplitSpans(spans)
	require.NoError(t, err)
	raws = append(raws, split...)
	_, hasLLM, err := RebuildTrace(raws)
	require.NoError(t, err)
	require.False(t, hasLLM, "a system-only trace is stored, not listed")
	lr, unjoinable, other, err := SplitLogs([]byte(logs))
	require.NoError(t, err)
	require.Zero(t, unjoinable+other)
	tr, hasLLM, err := RebuildTrace(append(raws, lr...))
	require.NoError(t, err)
	require.True(t, hasLLM)
	require.Len(t, tr.Steps, 3)
}

// TestOTelToolResultKeepsKeyOrder: a tool result recorded as a JSON object
// (the Vercel AI SDK's tool-result part with a json output) is stored with
// its keys in the order recorded, not sorted by a re-marshal through a map.
func TestOTelToolResultKeepsKeyOrder(t *testing.T) {
	data := otelSpansReq(t, "svc", map[string]any{"ai.operationId": "ai.generateText.doGenerate",
		"ai.prompt.messages": `[{"role":"user","content":[{"type":"text","text":"Weather?"}]},` +
			`{"role":"assistant","content":[{"type":"tool-call","toolCallId":"c1","toolName":"get_weather","input":{"city":"Paris"}}]},` +
			`{"role":"tool","content":[{"type":"tool-result","toolCallId":"c1","toolName":"get_weather","output":{"type":"json","value":{"temp_c":21,"sky":"clear","city":"Paris","nested":{"z":1,"a":2}}}}]}]`,
		"ai.response.text": "Clear."})
	ts, err := OTel{}.Parse(data)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	var tool *domain.Step
	for i := range ts[0].Steps {
		if ts[0].Steps[i].Role == domain.RoleTool {
			tool = &ts[0].Steps[i]
		}
	}
	require.NotNil(t, tool)
	require.Equal(t, `{"temp_c":21,"sky":"clear","city":"Paris","nested":{"z":1,"a":2}}`, tool.Content)
	require.Equal(t, "c1", tool.ToolCallID)
}

// otlpAnyValue is v as an OTLP/JSON AnyValue.
func otlpAnyValue(v any) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		var kv []any
		for k, c := range x {
			kv = append(kv, map[string]any{"key": k, "value": otlpAnyValue(c)})
		}
		return map[string]any{"kvlistValue": map[string]any{"values": kv}}
	case []any:
		var l []any
		for _, c := range x {
			l = append(l, otlpAnyValue(c))
		}
		return map[string]any{"arrayValue": map[string]any{"values": l}}
	}
	return map[string]any{"stringValue": anyString(v)}
}

// TestOTelPerMessageLogsOrderedWhenRaced: @opentelemetry/instrumentation-
// openai stamps a call's whole history with one millisecond; exported one
// record per request (SimpleLogRecordProcessor) the records arrive in any
// order. The steps still come out as the conversation: system, user, the
// assistant's call, its tool result, then the choice.
func TestOTelPerMessageLogsOrderedWhenRaced(t *testing.T) {
	const ts = 1_700_000_000_000_000_000
	rec := func(name string, body map[string]any) map[string]any {
		return map[string]any{"traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "00000000000000a1", "timeUnixNano": ts,
			"eventName": name, "body": otlpAnyValue(body)}
	}
	// Arrival order as raced: tool, user, choice, assistant, system.
	records := []any{
		rec("gen_ai.tool.message", map[string]any{"id": "call_1", "content": "sunny"}),
		rec("gen_ai.user.message", map[string]any{"content": "Weather?"}),
		rec("gen_ai.choice", map[string]any{"finish_reason": "stop", "message": map[string]any{"content": "Sunny."}}),
		rec("gen_ai.assistant.message", map[string]any{"tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}}),
		rec("gen_ai.system.message", map[string]any{"content": "Be brief."}),
	}
	tr, roles := rebuildPerMessageLogs(t, records, []any{map[string]any{
		"traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "00000000000000a1", "name": "chat gpt-4o-mini",
		"startTimeUnixNano": ts, "endTimeUnixNano": ts + 1000,
		"attributes": []any{map[string]any{"key": "gen_ai.operation.name", "value": map[string]any{"stringValue": "chat"}}}}})
	require.Equal(t, []domain.Role{domain.RoleSystem, domain.RoleUser, domain.RoleAssistant, domain.RoleTool, domain.RoleAssistant}, roles)
	require.Equal(t, "get_weather", tr.Steps[2].ToolName)
	require.Equal(t, "call_1", tr.Steps[3].ToolCallID)
	require.Equal(t, "Sunny.", tr.Steps[4].Content)
}

// TestOTelRacedHistoryFollowsTheConversation: the second call of a rooted
// trace re-sends the history as log records of one millisecond that arrive
// in an order that is plausible but wrong (system, the assistant's call,
// user, tool). The re-sent history is taken in the order the conversation
// already holds it, so the user's question is not repeated after the call.
func TestOTelRacedHistoryFollowsTheConversation(t *testing.T) {
	const t1, t2 = 1_700_000_000_000_000_000, 1_700_000_000_100_000_000
	const tid = "0102030405060708090a0b0c0d0e0f10"
	rec := func(span string, ts int64, name string, body map[string]any) map[string]any {
		return map[string]any{"traceId": tid, "spanId": span, "timeUnixNano": ts, "eventName": name, "body": otlpAnyValue(body)}
	}
	toolCall := map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}
	records := []any{
		rec("00000000000000a1", t1, "gen_ai.system.message", map[string]any{"content": "Be brief."}),
		rec("00000000000000a1", t1, "gen_ai.user.message", map[string]any{"content": "Weather?"}),
		rec("00000000000000a1", t1+50, "gen_ai.choice", map[string]any{"finish_reason": "tool_calls", "message": map[string]any{"tool_calls": []any{toolCall}}}),
		rec("00000000000000a2", t2, "gen_ai.system.message", map[string]any{"content": "Be brief."}),
		rec("00000000000000a2", t2, "gen_ai.assistant.message", map[string]any{"tool_calls": []any{toolCall}}),
		rec("00000000000000a2", t2, "gen_ai.user.message", map[string]any{"content": "Weather?"}),
		rec("00000000000000a2", t2, "gen_ai.tool.message", map[string]any{"id": "call_1", "content": "sunny"}),
		rec("00000000000000a2", t2+50, "gen_ai.choice", map[string]any{"finish_reason": "stop", "message": map[string]any{"content": "Sunny."}}),
	}
	chat := map[string]any{"key": "gen_ai.operation.name", "value": map[string]any{"stringValue": "chat"}}
	var spans []any
	for _, sp := range []struct {
		id         string
		start, end int64
	}{{"00000000000000a1", t1, t1 + 60}, {"00000000000000a2", t2, t2 + 60}} {
		spans = append(spans, map[string]any{"traceId": tid, "spanId": sp.id, "parentSpanId": "00000000000000ff", "name": "chat gpt-4o-mini",
			"startTimeUnixNano": sp.start, "endTimeUnixNano": sp.end, "attributes": []any{chat}})
	}
	tr, roles := rebuildPerMessageLogs(t, records, spans)
	require.Equal(t, []domain.Role{domain.RoleSystem, domain.RoleUser, domain.RoleAssistant, domain.RoleTool, domain.RoleAssistant}, roles)
	require.Equal(t, "Sunny.", tr.Steps[4].Content)
}

// rebuildPerMessageLogs sends each log record in its own request (as a
// SimpleLogRecordProcessor does), then the spans, and rebuilds the trace
// the live receiver stores: the trace and its steps' roles.
func rebuildPerMessageLogs(t *testing.T, records, spans []any) (domain.Trace, []domain.Role) {
	t.Helper()
	var raws []RawSpan
	for _, r := range records {
		b, err := json.Marshal(map[string]any{"resourceLogs": []any{map[string]any{"scopeLogs": []any{map[string]any{"logRecords": []any{r}}}}}})
		require.NoError(t, err)
		split, _, _, err := SplitLogs(b)
		require.NoError(t, err)
		raws = append(raws, split...)
	}
	body, err := json.Marshal(map[string]any{"resourceSpans": []any{map[string]any{"scopeSpans": []any{map[string]any{"spans": spans}}}}})
	require.NoError(t, err)
	split, err := SplitSpans(body)
	require.NoError(t, err)
	all := append(raws, split...)
	tr, hasLLM, err := RebuildTrace(all)
	require.NoError(t, err)
	require.True(t, hasLLM)
	// As the live receiver builds it, one record more each export through
	// the conversation's memo: the same trace.
	memo := NewSpanMemo()
	for k := 1; k < len(all); k++ {
		_, _, err := RebuildConversation(all[:k], "", nil, memo)
		require.NoError(t, err)
	}
	live, _, err := RebuildConversation(all, "", nil, memo)
	require.NoError(t, err)
	require.Equal(t, tr, live)
	var roles []domain.Role
	for _, s := range tr.Steps {
		roles = append(roles, s.Role)
	}
	return tr, roles
}
