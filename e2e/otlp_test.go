package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestOTLPReceiverWithTheGoSDK sends GenAI spans with the official Go SDK's
// OTLP/HTTP exporter (protobuf) through a BatchSpanProcessor, and checks the
// trace Critic rebuilds from them.
func TestOTLPReceiverWithTheGoSDK(t *testing.T) {
	in := startServe(t)
	key := in.newUser("agent", false)
	ctx := context.Background()

	exp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(in.url+"/api/v1/rm/otel/v1/traces"),
		otlptracehttp.WithHeaders(map[string]string{"Authorization": "Bearer " + key, "X-Critic-Trace-Source": "weather-agent"}))
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(50*time.Millisecond)))
	tracer := tp.Tracer("e2e")

	// The agent's root span arrives first, alone: stored, not listed.
	rootCtx, root := tracer.Start(ctx, "invoke_agent weather", trace.WithAttributes(attribute.String("gen_ai.operation.name", "invoke_agent")))
	traceHex := root.SpanContext().TraceID().String()
	root.End()
	require.NoError(t, tp.ForceFlush(ctx))
	require.Equal(t, float64(0), in.do("GET", "/api/v1/rm/traces", key, nil).JSON(t)["total"])

	call1 := `[{"role":"user","parts":[{"type":"text","content":"What's the weather in Paris?"}]}]`
	out1 := `[{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"get_weather","arguments":{"city":"Paris"}}],"finish_reason":"tool_call"}]`
	call2 := `[{"role":"user","parts":[{"type":"text","content":"What's the weather in Paris?"}]},` +
		`{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"get_weather","arguments":{"city":"Paris"}}]},` +
		`{"role":"tool","parts":[{"type":"tool_call_response","id":"call_1","response":"rainy, 57°F"}]}]`
	out2 := `[{"role":"assistant","parts":[{"type":"text","content":"It is rainy and 57°F in Paris."}],"finish_reason":"stop"}]`
	for _, c := range [][2]string{{call1, out1}, {call2, out2}} {
		_, sp := tracer.Start(rootCtx, "chat gpt-4o", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.request.model", "gpt-4o"),
			attribute.String("gen_ai.input.messages", c[0]),
			attribute.String("gen_ai.output.messages", c[1])))
		time.Sleep(2 * time.Millisecond)
		sp.End()
	}
	require.NoError(t, tp.Shutdown(ctx))

	list := in.do("GET", "/api/v1/rm/traces", key, nil).JSON(t)
	require.Equal(t, float64(1), list["total"])
	summary := list["traces"].([]any)[0].(map[string]any)
	require.Equal(t, traceHex, summary["external_id"])
	require.Equal(t, "otel", summary["source_format"])
	require.Equal(t, "weather-agent", summary["source_id"])
	d := in.getTrace(t, key, summary["id"].(string))
	roles := []string{}
	for _, s := range d.Steps {
		roles = append(roles, s["role"].(string))
	}
	require.Equal(t, []string{"user", "assistant", "tool", "assistant"}, roles, "history re-sent by the second call is not duplicated")
	require.Equal(t, "get_weather", d.Steps[1]["tool_name"])
	require.Equal(t, map[string]any{"city": "Paris"}, d.Steps[1]["tool_input"])
	require.Equal(t, "call_1", d.Steps[2]["tool_call_id"])
	require.Equal(t, "It is rainy and 57°F in Paris.", d.Steps[3]["content"])
	require.Len(t, d.Spans, 3)
	rootID := root.SpanContext().SpanID().String()
	var chats int
	for _, s := range d.Spans {
		sp := s.(map[string]any)
		require.IsType(t, "", sp["start_ns"], "nanoseconds are decimal strings")
		if sp["id"] == rootID {
			require.Nil(t, sp["parent_id"])
			continue
		}
		chats++
		require.Equal(t, rootID, sp["parent_id"])
		require.NotEmpty(t, sp["step_indices"])
	}
	require.Equal(t, 2, chats)

	t.Run("JSON with gzip, retried: no duplicates", func(t *testing.T) {
		body := otlpJSON(traceHex, "00000000000000aa", `[{"role":"user","parts":[{"type":"text","content":"And tomorrow?"}]}]`,
			`[{"role":"assistant","parts":[{"type":"text","content":"Sunny."}]}]`)
		for range 2 {
			r := postOTLP(t, in, key, "application/json", "gzip", gz(t, body))
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
			require.Equal(t, "{}", string(r.Body))
		}
		require.Equal(t, float64(1), in.do("GET", "/api/v1/rm/traces", key, nil).JSON(t)["total"])
		d := in.getTrace(t, key, summary["id"].(string))
		require.Len(t, d.Spans, 4)
	})

	t.Run("bad requests store nothing", func(t *testing.T) {
		before := in.eventCount()
		r := postOTLP(t, in, key, "text/plain", "", []byte("hello"))
		require.Equal(t, http.StatusUnsupportedMediaType, r.Status)
		r = postOTLP(t, in, key, "application/json", "br", []byte("{}"))
		require.Equal(t, http.StatusUnsupportedMediaType, r.Status)
		r = postOTLP(t, in, key, "application/x-protobuf", "", []byte("\xff\xff not protobuf"))
		require.Equal(t, http.StatusBadRequest, r.Status)
		// Spans that parse but whose content cannot be used: accepted, the
		// trace rejected in partial_success (a 400 would make the exporter
		// drop every other trace of its batch), nothing stored.
		r = postOTLP(t, in, key, "application/json", "", otlpJSON("0102030405060708090a0b0c0d0e0f10", "00000000000000bb", `not json`, `[]`))
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		ps := r.JSON(t)["partialSuccess"].(map[string]any)
		require.Equal(t, "1", fmt.Sprint(ps["rejectedSpans"]))
		require.Contains(t, ps["errorMessage"], "gen_ai.input.messages")
		require.Contains(t, ps["errorMessage"], "0102030405060708090a0b0c0d0e0f10")
		ro, err := in.cli("users", "issue-key", "--name", "agent", "--read-only-key")
		require.NoError(t, err)
		r = postOTLP(t, in, keyRe.FindStringSubmatch(ro)[1], "application/json", "", otlpJSON(traceHex, "00000000000000cc", call1, out1))
		require.Equal(t, http.StatusForbidden, r.Status)
		require.Equal(t, before+1, in.eventCount(), "only the read-only key's api_key.issued event was added")
	})
}

func otlpJSON(traceHex, spanHex, input, output string) []byte {
	now := time.Now().UnixNano()
	req := map[string]any{"resourceSpans": []any{map[string]any{
		"resource": map[string]any{"attributes": []any{map[string]any{"key": "service.name", "value": map[string]any{"stringValue": "weather"}}}},
		"scopeSpans": []any{map[string]any{"spans": []any{map[string]any{
			"traceId": traceHex, "spanId": spanHex, "name": "chat", "kind": 3,
			"startTimeUnixNano": fmt.Sprint(now), "endTimeUnixNano": fmt.Sprint(now + 1000),
			"attributes": []any{
				map[string]any{"key": "gen_ai.operation.name", "value": map[string]any{"stringValue": "chat"}},
				map[string]any{"key": "gen_ai.input.messages", "value": map[string]any{"stringValue": input}},
				map[string]any{"key": "gen_ai.output.messages", "value": map[string]any{"stringValue": output}},
			},
		}}}},
	}}}
	b, _ := json.Marshal(req)
	return b
}

func gz(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func postOTLP(t *testing.T, in *instance, key, ct, enc string, body []byte) response {
	req, err := http.NewRequest("POST", in.url+"/api/v1/rm/otel/v1/traces", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", ct)
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return response{Status: resp.StatusCode, Body: buf.Bytes()}
}

// TestOTLPResentSpansKeepTheReview is an exporter retrying its batches: a
// re-sent span appends nothing and keeps step ids and annotations; a span
// that only adds messages at the end appends; only a change in an earlier
// message replaces the steps (and removes their step annotations).
func TestOTLPResentSpansKeepTheReview(t *testing.T) {
	in := startServe(t)
	key := in.newUser("agent", false)
	const traceHex = "4bf92f3577b34da6a3ce929d0e0e4736"
	q1 := `[{"role":"user","parts":[{"type":"text","content":"What's the weather in Paris?"}]}]`
	a1 := `[{"role":"assistant","parts":[{"type":"text","content":"Rainy."}]}]`
	first := otlpJSON(traceHex, "00000000000000a1", q1, a1)
	send := func(body []byte) {
		r := postOTLP(t, in, key, "application/json", "", body)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	}
	countType := func(typ string) int {
		var n int
		require.NoError(t, in.pool.QueryRow(context.Background(), "SELECT count(*) FROM events WHERE type = $1", typ).Scan(&n))
		return n
	}
	stepIDs := func(d traceDetail) []string {
		var ids []string
		for _, s := range d.Steps {
			ids = append(ids, s["id"].(string))
		}
		return ids
	}

	send(first)
	list := in.do("GET", "/api/v1/rm/traces", key, nil).JSON(t)
	require.Equal(t, float64(1), list["total"])
	traceID := list["traces"].([]any)[0].(map[string]any)["id"].(string)
	d := in.getTrace(t, key, traceID)
	require.Len(t, d.Steps, 2)
	ids := stepIDs(d)
	r := in.do("POST", "/api/v1/rm/traces/"+traceID+"/annotations", key, map[string]any{"step_id": ids[1], "rating": -1, "comment": "no tool call"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	annID := r.JSON(t)["id"].(string)

	before := in.eventCount()
	send(first) // the BatchSpanProcessor's retry
	send(first)
	require.Equal(t, before, in.eventCount(), "a re-sent span appends no event")
	d = in.getTrace(t, key, traceID)
	require.Equal(t, ids, stepIDs(d), "same step ids")
	require.Len(t, d.Annotations, 1)
	require.Equal(t, annID, d.Annotations[0].(map[string]any)["id"])
	require.Equal(t, 1, countType("trace.imported.v1"))
	require.Equal(t, 0, countType("trace.revised.v1"), "one revision")

	// A later call re-sends the history and adds a turn: appended.
	q2 := `[{"role":"user","parts":[{"type":"text","content":"What's the weather in Paris?"}]},` +
		`{"role":"assistant","parts":[{"type":"text","content":"Rainy."}]},` +
		`{"role":"user","parts":[{"type":"text","content":"And tomorrow?"}]}]`
	second := otlpJSON(traceHex, "00000000000000a2", q2, `[{"role":"assistant","parts":[{"type":"text","content":"Sunny."}]}]`)
	send(second)
	d = in.getTrace(t, key, traceID)
	require.Len(t, d.Steps, 4)
	require.Equal(t, ids, stepIDs(d)[:2], "existing step ids are kept")
	require.Len(t, d.Annotations, 1, "the step annotation survives an append")
	require.Len(t, d.Spans, 2)
	revised := in.openedPayloads(t, "trace.revised.v1") // sealed in the log
	require.Len(t, revised, 1)
	require.Equal(t, "appended", revised[0]["mode"])
	appended := stepIDs(d)

	before = in.eventCount()
	send(first)
	send(second)
	require.Equal(t, before, in.eventCount(), "re-sending both spans appends nothing")
	require.Equal(t, appended, stepIDs(in.getTrace(t, key, traceID)))

	// The first call's span, re-sent with a different earlier message: a
	// real change to that step only, so it gets a new id while the
	// unchanged answer after it keeps its id and its annotation.
	changed := bytes.Replace(first, []byte("Paris"), []byte("Lyon"), 1) // same span id, same times
	require.NotEqual(t, first, changed)
	send(changed)
	d = in.getTrace(t, key, traceID)
	require.NotEqual(t, ids[0], stepIDs(d)[0], "the changed message is a new step")
	require.Equal(t, ids[1], stepIDs(d)[1], "the unchanged answer keeps its id")
	require.Len(t, d.Annotations, 1, "only annotations on changed steps are removed")
	require.Equal(t, 2, countType("trace.revised.v1"))
}
