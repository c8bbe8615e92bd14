package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
)

// sendOTLP posts body to an OTLP path; safe to call from goroutines (no
// require inside).
func sendOTLP(url, auth, ct string, body []byte) (response, error) {
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return response{}, err
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return response{Status: resp.StatusCode, Body: buf.Bytes()}, nil
}

// otlpSpan is one span of an OTLP/JSON request built by otlpSpans.
type otlpSpan struct {
	trace, id, parent, name string
	start                   int64
	attrs                   map[string]string
}

func otlpSpans(service string, spans ...otlpSpan) []byte {
	var list []any
	for _, s := range spans {
		var attrs []any
		for k, v := range s.attrs {
			attrs = append(attrs, map[string]any{"key": k, "value": map[string]any{"stringValue": v}})
		}
		sp := map[string]any{"traceId": s.trace, "spanId": s.id, "name": s.name, "kind": 3,
			"startTimeUnixNano": fmt.Sprint(s.start), "endTimeUnixNano": fmt.Sprint(s.start + 500_000), "attributes": attrs}
		if s.parent != "" {
			sp["parentSpanId"] = s.parent
		}
		list = append(list, sp)
	}
	b, _ := json.Marshal(map[string]any{"resourceSpans": []any{map[string]any{
		"resource":   map[string]any{"attributes": []any{map[string]any{"key": "service.name", "value": map[string]any{"stringValue": service}}}},
		"scopeSpans": []any{map[string]any{"spans": list}},
	}}})
	return b
}

func genAIText(role, text string) map[string]any {
	return map[string]any{"role": role, "parts": []any{map[string]any{"type": "text", "content": text}}}
}

func stepRoles(d traceDetail) []string {
	var out []string
	for _, s := range d.Steps {
		out = append(out, s["role"].(string))
	}
	return out
}

// TestOTLPConcurrentSpansOfOneTrace is a SimpleSpanProcessor (or Langfuse's
// immediate mode) in ten agents at once: every span of every trace in its
// own request, all requests in flight together. Before, half of them got
// 409 concurrent_write, which exporters drop: traces went missing or
// stopped half way. Every request must now be accepted and every trace
// arrive whole.
func TestOTLPConcurrentSpansOfOneTrace(t *testing.T) {
	in := startServe(t)
	key := in.newUser("agent", false)
	const traces, calls = 10, 6 // 6 LLM calls + the agent's root span = 7 spans per trace
	base := time.Now().UnixNano()
	var bodies [][]byte
	for tr := range traces {
		traceHex := fmt.Sprintf("%032x", 0xabc000+tr)
		root := fmt.Sprintf("%016x", 0x100+tr)
		bodies = append(bodies, otlpSpans("agent", otlpSpan{trace: traceHex, id: root, name: "invoke_agent", start: base,
			attrs: map[string]string{"gen_ai.operation.name": "invoke_agent"}}))
		var history []any
		for c := range calls {
			history = append(history, genAIText("user", fmt.Sprintf("trace %d question %d", tr, c)))
			answer := genAIText("assistant", fmt.Sprintf("trace %d answer %d", tr, c))
			bodies = append(bodies, otlpSpans("agent", otlpSpan{trace: traceHex, id: fmt.Sprintf("%016x", 0x1000+tr*16+c), parent: root,
				name: "chat", start: base + int64(c+1)*1_000_000, attrs: map[string]string{
					"gen_ai.operation.name":  "chat",
					"gen_ai.input.messages":  mustJSON(history),
					"gen_ai.output.messages": mustJSON([]any{answer}),
				}}))
			history = append(history, answer)
		}
	}
	require.Len(t, bodies, 70)

	statuses := make([]int, len(bodies))
	errs := make([]error, len(bodies))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, b := range bodies {
		wg.Go(func() {
			<-start
			r, err := sendOTLP(in.url+"/api/v1/rm/otel/v1/traces", "Bearer "+key, "application/json", b)
			statuses[i], errs[i] = r.Status, err
			if err == nil && r.Status != http.StatusOK {
				errs[i] = fmt.Errorf("status %d: %s", r.Status, r.Body)
			}
		})
	}
	close(start)
	wg.Wait()
	for i := range bodies {
		require.NoError(t, errs[i], "request %d", i)
		require.Equal(t, http.StatusOK, statuses[i], "request %d: never a 409", i)
	}

	list := in.do("GET", "/api/v1/rm/traces?limit=100", key, nil).JSON(t)
	require.Equal(t, float64(traces), list["total"], "10/10 traces listed")
	var spans int
	for _, s := range list["traces"].([]any) {
		d := in.getTrace(t, key, s.(map[string]any)["id"].(string))
		require.Len(t, d.Steps, 2*calls, "trace %s complete", d.ID)
		tr := -1
		_, err := fmt.Sscanf(d.Steps[0]["content"].(string), "trace %d question 0", &tr)
		require.NoError(t, err)
		for c := range calls {
			require.Equal(t, fmt.Sprintf("trace %d question %d", tr, c), d.Steps[2*c]["content"])
			require.Equal(t, fmt.Sprintf("trace %d answer %d", tr, c), d.Steps[2*c+1]["content"])
		}
		spans += len(d.Spans)
	}
	require.Equal(t, 70, spans, "70/70 spans stored")
}

// TestOTLPBatchWithAnUnusableTrace: a BatchSpanProcessor batches every span
// that ended within a few seconds, whatever its trace. One trace whose
// content cannot be used must not cost the others: the request is accepted,
// the bad trace is reported in partial_success, the good one is stored, and
// a trace with only system instructions so far is stored, not listed, and
// completed by its messages arriving later as log records.
func TestOTLPBatchWithAnUnusableTrace(t *testing.T) {
	in := startServe(t)
	key := in.newUser("agent", false)
	now := time.Now().UnixNano()
	const good, bad, sysOnly = "11111111111111111111111111111111", "22222222222222222222222222222222", "33333333333333333333333333333333"
	body := otlpSpans("agent",
		otlpSpan{trace: good, id: "1111111111111111", name: "chat", start: now, attrs: map[string]string{
			"gen_ai.operation.name":  "chat",
			"gen_ai.input.messages":  mustJSON([]any{genAIText("user", "Hi")}),
			"gen_ai.output.messages": mustJSON([]any{genAIText("assistant", "Hello!")}),
		}},
		otlpSpan{trace: bad, id: "2222222222222222", name: "chat", start: now, attrs: map[string]string{
			"gen_ai.operation.name": "chat",
			"gen_ai.input.messages": "this is not JSON",
		}},
		otlpSpan{trace: sysOnly, id: "3333333333333333", name: "chat gpt-4o", start: now, attrs: map[string]string{
			"gen_ai.operation.name":      "chat",
			"gen_ai.request.model":       "gpt-4o",
			"gen_ai.system_instructions": mustJSON([]any{map[string]any{"type": "text", "content": "You are terse."}}),
		}},
	)
	r, err := sendOTLP(in.url+"/api/v1/rm/otel/v1/traces", "Bearer "+key, "application/json", body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ps := r.JSON(t)["partialSuccess"].(map[string]any)
	require.Equal(t, "1", fmt.Sprint(ps["rejectedSpans"]))
	require.Contains(t, ps["errorMessage"], bad)
	require.NotContains(t, ps["errorMessage"], good)

	list := in.do("GET", "/api/v1/rm/traces", key, nil).JSON(t)
	require.Equal(t, float64(1), list["total"], "the good trace is listed; the system-only one is stored, not listed")
	require.Equal(t, good, list["traces"].([]any)[0].(map[string]any)["external_id"])
	// A trace's payloads are sealed in the log: read them opened.
	n := 0
	for _, p := range in.openedPayloads(t, "otel.spans_received.v1") {
		if p["otel_trace_id"] == sysOnly {
			n++
		}
	}
	require.Equal(t, 1, n, "the system-only trace's span is stored")
	for _, p := range in.openedPayloads(t, "") {
		require.NotEqual(t, bad, p["otel_trace_id"], "nothing of the unusable trace is stored")
	}

	// Its messages arrive as log records: merged with the span's system
	// instructions.
	logs := genAILogs(sysOnly, "3333333333333333", now,
		logRec{"gen_ai.user.message", map[string]any{"content": "Capital of France?"}},
		logRec{"gen_ai.choice", map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"content": "Paris."}}})
	r, err = sendOTLP(in.url+"/api/v1/rm/otel/v1/logs", "Bearer "+key, "application/x-protobuf", logs)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	list = in.do("GET", "/api/v1/rm/traces?limit=10", key, nil).JSON(t)
	require.Equal(t, float64(2), list["total"])
	d := in.getTraceByExternal(t, key, sysOnly)
	require.Equal(t, []string{"system", "user", "assistant"}, stepRoles(d))
	require.Equal(t, "You are terse.", d.Steps[0]["content"])
	require.Equal(t, "Paris.", d.Steps[2]["content"])
}

type logRec struct {
	name string
	body map[string]any
}

// genAILogs builds an OTLP logs request in protobuf, as
// @opentelemetry/instrumentation-openai emits it: one record per message,
// the event name in the record and in event.name, the content in the body.
func genAILogs(traceHex, spanHex string, ts int64, recs ...logRec) []byte {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "agent")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("@opentelemetry/instrumentation-openai")
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	tb, _ := hex.DecodeString(traceHex)
	sb, _ := hex.DecodeString(spanHex)
	copy(tid[:], tb)
	copy(sid[:], sb)
	for i, r := range recs {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTraceID(tid)
		lr.SetSpanID(sid)
		lr.SetTimestamp(pcommon.Timestamp(ts + int64(i)))
		lr.SetEventName(r.name)
		lr.Attributes().PutStr("event.name", r.name)
		lr.Attributes().PutStr("gen_ai.system", "openai")
		if err := lr.Body().SetEmptyMap().FromRaw(r.body); err != nil {
			panic(err)
		}
	}
	b, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		panic(err)
	}
	return b
}

func (in *instance) getTraceByExternal(t testing.TB, key, external string) traceDetail {
	t.Helper()
	list := in.do("GET", "/api/v1/rm/traces?limit=100", key, nil).JSON(t)
	for _, s := range list["traces"].([]any) {
		m := s.(map[string]any)
		if m["external_id"] == external {
			return in.getTrace(t, key, m["id"].(string))
		}
	}
	t.Fatalf("no trace with external id %s", external)
	return traceDetail{}
}

// TestOTLPLogsJoinTheirSpans is @opentelemetry/instrumentation-openai's
// shape: spans without content, the messages as log records, posted to
// …/v1/logs before or after the spans and in several requests. Before, the
// logs endpoint answered 404 and the trace was never listed.
func TestOTLPLogsJoinTheirSpans(t *testing.T) {
	in := startServe(t)
	key := in.newUser("agent", false)
	now := time.Now().UnixNano()
	const traceHex, call1, call2, call3 = "44444444444444444444444444444444", "4444444444444401", "4444444444444402", "4444444444444403"
	post := func(path, ct string, body []byte) response {
		r, err := sendOTLP(in.url+path, "Bearer "+key, ct, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		return r
	}
	chatSpan := func(id string, start int64) otlpSpan {
		return otlpSpan{trace: traceHex, id: id, name: "chat gpt-4o-mini", start: start, attrs: map[string]string{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.system": "openai"}}
	}
	// Call 1's logs arrive before its span.
	post("/api/v1/rm/otel/v1/logs", "application/x-protobuf", genAILogs(traceHex, call1, now,
		logRec{"gen_ai.system.message", map[string]any{"content": "You help with weather."}},
		logRec{"gen_ai.user.message", map[string]any{"content": "Weather in Paris?"}},
		logRec{"gen_ai.choice", map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{
			"tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}}}}))
	post("/api/v1/rm/otel/v1/traces", "application/json", otlpSpans("agent", chatSpan(call1, now)))
	// Call 2: span first, then its logs in two requests.
	post("/api/v1/rm/otel/v1/traces", "application/json", otlpSpans("agent", chatSpan(call2, now+10_000_000)))
	post("/api/v1/rm/otel/v1/logs", "application/x-protobuf", genAILogs(traceHex, call2, now+10_000_000,
		logRec{"gen_ai.system.message", map[string]any{"content": "You help with weather."}},
		logRec{"gen_ai.user.message", map[string]any{"content": "Weather in Paris?"}},
		logRec{"gen_ai.assistant.message", map[string]any{"tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}}},
		logRec{"gen_ai.tool.message", map[string]any{"id": "call_1", "content": "rainy, 11°C"}}))
	post("/api/v1/rm/otel/v1/logs", "application/x-protobuf", genAILogs(traceHex, call2, now+20_000_000,
		logRec{"gen_ai.choice", map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"content": "Rainy, 11°C."}}}))

	d := in.getTraceByExternal(t, key, traceHex)
	require.Equal(t, []string{"system", "user", "assistant", "tool", "assistant"}, stepRoles(d))
	require.Equal(t, "get_weather", d.Steps[2]["tool_name"])
	require.Equal(t, "call_1", d.Steps[3]["tool_call_id"], "the tool result pairs with its call")
	require.Equal(t, "Rainy, 11°C.", d.Steps[4]["content"])

	// A Responses API call: one operation.details record for the input and
	// another for the output; the function_call part carries an item id and
	// the call_id its output answers.
	post("/api/v1/rm/otel/v1/traces", "application/json", otlpSpans("agent", chatSpan(call3, now+30_000_000)))
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	tb, _ := hex.DecodeString(traceHex)
	sb, _ := hex.DecodeString(call3)
	for i, attrs := range []map[string]any{
		{"gen_ai.input.messages": []any{
			genAIText("user", "And tomorrow?"),
			map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "function_call", "id": "fc_9", "call_id": "call_2", "name": "get_weather", "arguments": `{"city":"Paris","day":"tomorrow"}`}}},
			map[string]any{"role": "tool", "parts": []any{map[string]any{"type": "function_call_output", "id": "fco_9", "call_id": "call_2", "output": "sunny"}}},
		}},
		{"gen_ai.output.messages": []any{genAIText("assistant", "Sunny tomorrow.")}},
	} {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTraceID(pcommon.TraceID(tb))
		lr.SetSpanID(pcommon.SpanID(sb))
		lr.SetTimestamp(pcommon.Timestamp(now + 30_000_000 + int64(i)))
		lr.SetEventName("gen_ai.client.inference.operation.details")
		require.NoError(t, lr.Attributes().FromRaw(attrs))
	}
	b, err := plogotlp.NewExportRequestFromLogs(ld).MarshalJSON()
	require.NoError(t, err)
	post("/api/v1/rm/otel/v1/logs", "application/json", b)
	d = in.getTraceByExternal(t, key, traceHex)
	require.Equal(t, []string{"system", "user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant"}, stepRoles(d))
	require.Equal(t, "call_2", d.Steps[6]["tool_call_id"])
	require.Equal(t, "call_2", d.Steps[7]["tool_call_id"], "the output pairs by call_id, not the item id")
	require.Equal(t, "Sunny tomorrow.", d.Steps[8]["content"], "the second operation.details record (the output) is read")

	// A re-sent logs batch stores nothing.
	before := in.eventCount()
	post("/api/v1/rm/otel/v1/logs", "application/json", b)
	require.Equal(t, before, in.eventCount())

	// Records outside any trace or not GenAI events: partial success.
	other := plog.NewLogs()
	olr := other.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	olr.Body().SetStr("GET /health 200")
	ob, err := plogotlp.NewExportRequestFromLogs(other).MarshalJSON()
	require.NoError(t, err)
	r := post("/api/v1/rm/otel/v1/logs", "application/json", ob)
	ps := r.JSON(t)["partialSuccess"].(map[string]any)
	require.Equal(t, "1", fmt.Sprint(ps["rejectedLogRecords"]))
	require.Contains(t, ps["errorMessage"], "gen_ai.")

	// Metrics: 200 with partial success, never 404.
	r = post("/api/v1/rm/otel/v1/metrics", "application/json", []byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"gen_ai.client.token.usage","sum":{"dataPoints":[{"asInt":"5"}]}}]}]}]}`))
	ps = r.JSON(t)["partialSuccess"].(map[string]any)
	require.Equal(t, "1", fmt.Sprint(ps["rejectedDataPoints"]))
	require.Contains(t, ps["errorMessage"], "metrics")
}

// TestOTLPLangfuseExporterPath: an app instrumented with Langfuse's OTel SDK
// changes only its base URL. Its exporter posts to /api/public/otel/v1/traces
// with Basic auth (public key : secret key); the Critic key is the password.
// Its generation spans carry langfuse.observation.* attributes.
func TestOTLPLangfuseExporterPath(t *testing.T) {
	in := startServe(t)
	key := in.newUser("agent", false)
	now := time.Now().UnixNano()
	const traceHex = "55555555555555555555555555555555"
	body := otlpSpans("langfuse-app",
		otlpSpan{trace: traceHex, id: "5555555555555501", name: "agent-run", start: now, attrs: map[string]string{
			"langfuse.observation.type":  "span",
			"langfuse.observation.input": `"What is 2+2?"`,
		}},
		otlpSpan{trace: traceHex, id: "5555555555555502", parent: "5555555555555501", name: "llm-call", start: now + 1000, attrs: map[string]string{
			"langfuse.observation.type":          "generation",
			"langfuse.observation.model.name":    "gpt-4o",
			"langfuse.observation.input":         `[{"role":"system","content":"Be brief."},{"role":"user","content":"What is 2+2?"}]`,
			"langfuse.observation.output":        `{"role":"assistant","content":"4"}`,
			"langfuse.observation.usage_details": `{"input":12,"output":1,"total":13}`,
		}})
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("pk-lf-anything:"+key))
	r, err := sendOTLP(in.url+"/api/public/otel/v1/traces", basic, "application/json", body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	d := in.getTraceByExternal(t, key, traceHex)
	require.Equal(t, []string{"system", "user", "assistant"}, stepRoles(d))
	require.Equal(t, "4", d.Steps[2]["content"])

	r, err = sendOTLP(in.url+"/api/public/otel/v1/traces", "Basic "+base64.StdEncoding.EncodeToString([]byte("pk:wrong")), "application/json", body)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, r.Status)
	require.True(t, strings.Contains(string(r.Body), "unauthorized"), string(r.Body))
}

// TestOTLPJoinsRootlessCalls is client-only instrumentation (the
// OpenInference and OpenLLMetry quick-starts: no span around the agent's
// loop): every LLM call is an OTel trace of its own re-sending the history.
// Calls naming a session (session.id, gen_ai.conversation.id) form that
// session's conversation; otherwise a call whose input strictly extends a
// conversation of the same service joins it. Two conversations of one
// service stay apart, and a call that extends no conversation is its own.
// Before, every call was listed as a truncated duplicate.
func TestOTLPJoinsRootlessCalls(t *testing.T) {
	in := startServe(t)
	key := in.newUser("agent", false)
	now := time.Now().UnixNano()
	send := func(body []byte) {
		t.Helper()
		r, err := sendOTLP(in.url+"/api/v1/rm/otel/v1/traces", "Bearer "+key, "application/json", body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		require.NotContains(t, string(r.Body), "rejected", string(r.Body))
	}
	call := func(trace, span string, start int64, extra map[string]string, input []any, output ...any) otlpSpan {
		attrs := map[string]string{
			"gen_ai.operation.name":  "chat",
			"gen_ai.input.messages":  mustJSON(input),
			"gen_ai.output.messages": mustJSON(output),
		}
		maps.Copy(attrs, extra)
		return otlpSpan{trace: trace, id: span, name: "chat", start: start, attrs: attrs}
	}
	sys := genAIText("system", "You are a weather agent.")
	askParis := genAIText("user", "Weather in Paris?")
	toolCall := map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": map[string]any{"city": "Paris"}}}}
	toolResult := map[string]any{"role": "tool", "parts": []any{map[string]any{"type": "tool_call_response", "id": "call_1", "response": "21C"}}}
	answer := genAIText("assistant", "21°C in Paris.")
	const a1, a2, a3 = "a1000000000000000000000000000000", "a2000000000000000000000000000000", "a3000000000000000000000000000000"

	// Conversation A, call by call (each its own OTel trace), a retry of the
	// first call in between; then a follow-up question.
	send(otlpSpans("agent", call(a1, "a100000000000001", now, nil, []any{sys, askParis}, toolCall)))
	send(otlpSpans("agent", call(a2, "a200000000000001", now+1e9, nil, []any{sys, askParis, toolCall, toolResult}, answer)))
	send(otlpSpans("agent", call(a1, "a100000000000001", now, nil, []any{sys, askParis}, toolCall)))
	follow := genAIText("user", "And tomorrow?")
	send(otlpSpans("agent", call(a3, "a300000000000001", now+2e9, nil, []any{sys, askParis, toolCall, toolResult, answer, follow}, genAIText("assistant", "Rain."))))

	// Conversation B of the same service, sent in one batch with its calls
	// out of order: apart from A, its calls joined.
	const b1, b2 = "b1000000000000000000000000000000", "b2000000000000000000000000000000"
	askRome := genAIText("user", "Weather in Rome?")
	romeAnswer := genAIText("assistant", "Sunny in Rome.")
	send(otlpSpans("agent",
		call(b2, "b200000000000001", now+4e9, nil, []any{sys, askRome, romeAnswer, follow}, genAIText("assistant", "Sunny too."))))
	send(otlpSpans("agent", call(b1, "b100000000000001", now+3e9, nil, []any{sys, askRome}, romeAnswer)))

	// A call that begins like A but does not extend it (another tool
	// result): a conversation of its own.
	const c1 = "c1000000000000000000000000000000"
	other := map[string]any{"role": "tool", "parts": []any{map[string]any{"type": "tool_call_response", "id": "call_1", "response": "unknown city"}}}
	send(otlpSpans("agent", call(c1, "c100000000000001", now+5e9, nil, []any{sys, askParis, toolCall, other}, genAIText("assistant", "Sorry."))))

	// A session named by session.id (OpenInference) or
	// gen_ai.conversation.id: its calls form one conversation even though
	// the second re-sends no history.
	const s1, s2 = "d1000000000000000000000000000000", "d2000000000000000000000000000000"
	send(otlpSpans("agent", call(s1, "d100000000000001", now+6e9, map[string]string{"session.id": "chat-42"}, []any{genAIText("user", "Hi")}, genAIText("assistant", "Hello!"))))
	send(otlpSpans("other-service", call(s2, "d200000000000001", now+7e9, map[string]string{"gen_ai.conversation.id": "chat-42"}, []any{genAIText("user", "Bye")}, genAIText("assistant", "Goodbye!"))))

	list := in.do("GET", "/api/v1/rm/traces?limit=100", key, nil).JSON(t)
	var externals []string
	for _, s := range list["traces"].([]any) {
		externals = append(externals, s.(map[string]any)["external_id"].(string))
	}
	require.ElementsMatch(t, []string{a1, b2, c1, "session:chat-42"}, externals,
		"A, B (first received call), the call extending nothing, the session")

	d := in.getTraceByExternal(t, key, a1)
	require.Equal(t, []string{"system", "user", "assistant", "tool", "assistant", "user", "assistant"}, stepRoles(d), stepsDump(d))
	require.Equal(t, "Rain.", d.Steps[6]["content"])
	d = in.getTraceByExternal(t, key, b2)
	require.Equal(t, []string{"system", "user", "assistant", "user", "assistant"}, stepRoles(d), stepsDump(d))
	require.Equal(t, "Sunny in Rome.", d.Steps[2]["content"])
	d = in.getTraceByExternal(t, key, c1)
	require.Equal(t, "unknown city", d.Steps[3]["content"], stepsDump(d))
	d = in.getTraceByExternal(t, key, "session:chat-42")
	require.Equal(t, []string{"user", "assistant", "user", "assistant"}, stepRoles(d), stepsDump(d))

	// The decision is in the event log: each joined call's spans-received
	// event names the conversation it joined, and the call's own stream
	// says where its records went.
	var conv, filed string
	for _, p := range in.openedPayloads(t, "otel.spans_received.v1") { // sealed in the log
		if p["otel_trace_id"] != a3 {
			continue
		}
		if f, ok := p["filed_in"].(string); ok {
			filed = f
		} else {
			conv, _ = p["conversation"].(string)
		}
	}
	require.Equal(t, a1, conv)
	require.True(t, strings.HasPrefix(filed, "otel-opening:"), filed)

	// Replay reaches the same traces without deciding again.
	before := dumpReadModel(t, in)
	out, err := in.cli("replay", "readmodel")
	require.NoError(t, err, out)
	require.Equal(t, before, dumpReadModel(t, in), "the read model equals a replay of the log")
}

// TestOTLPUsageInSQL: the model and token usage an LLM call's span reports
// are columns of the steps it produced in POST /query, so usage can be
// summed per model. Before, they were only inside steps.metadata.
func TestOTLPUsageInSQL(t *testing.T) {
	in := startServe(t)
	key := in.newUser("agent", false)
	now := time.Now().UnixNano()
	body := otlpSpans("agent", otlpSpan{trace: "e1000000000000000000000000000000", id: "e100000000000001", name: "chat", start: now, attrs: map[string]string{
		"gen_ai.operation.name":                "chat",
		"gen_ai.response.model":                "gpt-4o-2024-08-06",
		"gen_ai.usage.input_tokens":            "120",
		"gen_ai.usage.output_tokens":           "15",
		"gen_ai.usage.cache_read.input_tokens": "64",
		"gen_ai.input.messages":                mustJSON([]any{genAIText("user", "Hi")}),
		"gen_ai.output.messages":               mustJSON([]any{genAIText("assistant", "Hello!")}),
	}})
	r, err := sendOTLP(in.url+"/api/v1/rm/otel/v1/traces", "Bearer "+key, "application/json", body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	in.awaitQuery(t, key, "SELECT role, model, input_tokens, output_tokens, total_tokens, cached_tokens FROM steps ORDER BY step_index",
		[][]any{{"user", nil, nil, nil, nil, nil}, {"assistant", "gpt-4o-2024-08-06", 120, 15, 135, 64}})
}
