package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// emptyArgsInputs has, for every adapter, a conversation whose one tool call
// has an empty-object argument list ("run" called with {}). The id-less
// ones differ in content: id-less traces are keyed by their content, so two
// identical conversations would be one trace.
var emptyArgsInputs = map[string]string{
	"stash": `{"id":"stash-1","steps":[{"role":"user","content":"go"},{"role":"assistant","content":"","tool_name":"run","tool_input":{},"tool_call_id":"c1"},{"role":"tool","content":"ok","tool_name":"run","tool_call_id":"c1"}]}`,
	"openai_chat": `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"run","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"ok"}]}`,
	"anthropic_messages": `{"messages":[{"role":"user","content":"go now"},{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"run","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"ok"}]}]}`,
	"claude_code": `{"type":"user","sessionId":"s","uuid":"1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"go"}}` + "\n" +
		`{"type":"assistant","sessionId":"s","uuid":"2","timestamp":"2026-01-01T00:00:01Z","message":{"id":"m-2","role":"assistant","content":[{"type":"tool_use","id":"c1","name":"run","input":{}}]}}` + "\n" +
		`{"type":"user","sessionId":"s","uuid":"3","timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"ok"}]}}`,
	"codex": `{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}` + "\n" +
		`{"timestamp":"2025-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}` + "\n" +
		`{"timestamp":"2025-01-01T00:00:02Z","type":"response_item","payload":{"type":"function_call","name":"run","call_id":"c1","arguments":"{}"}}` + "\n" +
		`{"timestamp":"2025-01-01T00:00:03Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"ok"}}`,
	"langfuse": `{"id":"t","observations":[` +
		`{"id":"g1","type":"GENERATION","startTime":"2025-01-01T00:00:00Z","input":"{\"role\":\"user\",\"content\":\"go\"}","output":"{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"run\",\"input\":{}}]}"},` +
		`{"id":"g2","type":"GENERATION","startTime":"2025-01-01T00:00:02Z","input":"{\"content\":\"next\"}","output":"{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}"}]}`,
	"langsmith": `{"id":"r1","trace_id":"tr","parent_run_id":null,"run_type":"llm","name":"n","start_time":"2025-01-01T00:00:00","end_time":"2025-01-01T00:00:00",` +
		`"inputs":{"messages":[[{"type":"human","data":{"content":"go"}}]]},` +
		`"outputs":{"generations":[[{"text":"","message":{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"","additional_kwargs":{"tool_calls":[{"id":"c1","type":"function","function":{"name":"run","arguments":"{}"}}]}}}}]]}}`,
	"otel": `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"chat","kind":"SPAN_KIND_CLIENT","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[` +
		`{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},` +
		`{"key":"gen_ai.input.messages","value":{"stringValue":"[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"content\":\"go\"}]}]"}},` +
		`{"key":"gen_ai.output.messages","value":{"stringValue":"[{\"role\":\"assistant\",\"parts\":[{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"run\",\"arguments\":{}}]}]"}}]}]}]}]}`,
}

// TestEmptyToolArgumentsSurviveImportAndExport: a tool call with no
// arguments keeps `tool_input: {}` in every adapter's import, in GET
// /traces/{id}, in /export/traces, and through a re-import of that export.
func TestEmptyToolArgumentsSurviveImportAndExport(t *testing.T) {
	t.Parallel()
	in := startServe(t)
	key := in.newUser("noargs", false)
	other := in.newUser("noargs-again", false)

	callInput := func(key, id string) (json.RawMessage, bool) {
		r := in.do("GET", "/api/v1/rm/traces/"+id, key, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		var tr struct {
			Steps []struct {
				ToolName  *string         `json:"tool_name"`
				ToolInput json.RawMessage `json:"tool_input"`
			} `json:"steps"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &tr))
		for _, s := range tr.Steps {
			if s.ToolName != nil && *s.ToolName == "run" {
				return s.ToolInput, true // the call (tool results come after it)
			}
		}
		return nil, false
	}
	for format, data := range emptyArgsInputs {
		ids := in.importTraces(key, format, data)
		require.Len(t, ids, 1, format)
		got, ok := callInput(key, ids[0])
		require.True(t, ok, "%s: no tool call named run", format)
		require.JSONEq(t, `{}`, string(got), "%s: GET /traces/{id} tool_input", format)
	}

	r := in.do("GET", "/api/v1/rm/export/traces", key, nil)
	require.Equal(t, http.StatusOK, r.Status)
	lines := strings.Split(strings.TrimSpace(string(r.Body)), "\n")
	require.Len(t, lines, len(emptyArgsInputs))
	for _, l := range lines {
		require.Contains(t, l, `"tool_name":"run","tool_input":{}`, "export line: %s", l)
	}
	ids := in.importTraces(other, "stash", string(r.Body))
	require.Len(t, ids, len(emptyArgsInputs))
	for _, id := range ids {
		got, ok := callInput(other, id)
		require.True(t, ok)
		require.JSONEq(t, `{}`, string(got), "re-imported export")
	}
	r2 := in.do("GET", "/api/v1/rm/export/traces", other, nil)
	require.Equal(t, strings.Count(string(r.Body), `"tool_input":{}`), strings.Count(string(r2.Body), `"tool_input":{}`))
}
