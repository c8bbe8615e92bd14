package e2e

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/handlers/otlp"
)

// BenchmarkOTLP measures `make bench-otlp`: spans per second through
// POST /api/v1/rm/otel/v1/traces until the rebuilt traces are visible (the
// receiver answers once the read model has applied them), for the requests
// the Go SDK's BatchSpanProcessor sends (up to 512 spans per export,
// protobuf), sent one at a time and by 4 concurrent senders. Beside it, the
// in-process limit: decoding the same requests with pdata and rebuilding every
// touched trace from all its spans with formats.RebuildTrace. Then the logs
// path (otlp_bench_logs_test.go: spans plus GenAI log records vs their
// in-process decode) and a contention run (every span its own request, many
// per trace at once: throughput, p99, no failure). BenchmarkOTLPSession,
// also in bench-otlp, is a long agent run exported a span at a time.
func BenchmarkOTLP(b *testing.B) {
	for range b.N {
		runOTLPBench(b)
	}
}

const (
	otlpBatchSpans   = 512 // sdktrace.DefaultMaxExportBatchSize
	otlpRequests     = 50
	otlpChatsPerRun  = 6 // GenAI chat spans under each agent's root span
	otlpSpansPerRun  = otlpChatsPerRun + 1
	otlpBenchSenders = 4
)

// otlpAgentRuns builds the spans of agent runs, in the order a
// BatchSpanProcessor exports them (by end time: each run's chat spans, then
// its root span), cut into export requests of 512 spans. A run's spans may
// straddle two requests, as they do with the SDK. phase keeps the trace ids of
// separate runs apart.
func otlpAgentRuns(phase byte, requests int) (bodies [][]byte, runs int) {
	total := requests * otlpBatchSpans
	runs = (total + otlpSpansPerRun - 1) / otlpSpansPerRun
	type span struct {
		run, chat int // chat -1: the root span
	}
	var order []span
	for r := 0; r < runs; r++ {
		for c := range otlpChatsPerRun {
			order = append(order, span{r, c})
		}
		order = append(order, span{r, -1})
	}
	order = order[:total] // the last run is cut short: its root span has not ended yet
	base := time.Date(2026, 11, 2, 14, 0, 0, 0, time.UTC).UnixNano()
	for i := 0; i < total; i += otlpBatchSpans {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "support-agent")
		rs.Resource().Attributes().PutStr("telemetry.sdk.language", "go")
		rs.Resource().Attributes().PutStr("telemetry.sdk.name", "opentelemetry")
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("github.com/example/support-agent")
		for _, s := range order[i:min(i+otlpBatchSpans, total)] {
			fillAgentSpan(ss.Spans().AppendEmpty(), phase, s.run, s.chat, otlpChatsPerRun, base+int64(s.run)*int64(time.Minute))
		}
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			panic(err)
		}
		bodies = append(bodies, body)
	}
	return bodies, runs
}

func otlpTraceID(phase byte, run int) pcommon.TraceID {
	var id [16]byte
	id[0], id[1] = 0xc1, phase
	binary.BigEndian.PutUint64(id[8:], uint64(run)+1)
	return id
}

func otlpSpanID(run, chat int) pcommon.SpanID {
	var id [8]byte
	binary.BigEndian.PutUint32(id[:4], uint32(run)+1)
	binary.BigEndian.PutUint32(id[4:], uint32(chat+2))
	return id
}

// genAIMsg is one message of gen_ai.input.messages / gen_ai.output.messages.
type genAIMsg struct {
	Role         string           `json:"role"`
	Parts        []map[string]any `json:"parts"`
	FinishReason string           `json:"finish_reason,omitempty"`
}

// fillAgentSpan writes one span of agent run `run` of `calls` chat calls:
// the invoke_agent root (chat -1), or chat call `chat`, whose input re-sends
// the whole history: the user's request and every earlier tool call with
// its result; every call but the last asks for a tool.
func fillAgentSpan(sp ptrace.Span, phase byte, run, chat, calls int, start int64) {
	sp.SetTraceID(otlpTraceID(phase, run))
	sp.SetSpanID(otlpSpanID(run, chat))
	at := func(ns int64) pcommon.Timestamp { return pcommon.Timestamp(ns) }
	if chat < 0 {
		sp.SetName("invoke_agent support-agent")
		sp.SetKind(ptrace.SpanKindInternal)
		sp.SetStartTimestamp(at(start))
		sp.SetEndTimestamp(at(start + int64(calls)*int64(2*time.Second) + int64(time.Second)))
		sp.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
		sp.Attributes().PutStr("gen_ai.agent.name", "support-agent")
		sp.Attributes().PutStr("gen_ai.conversation.id", fmt.Sprintf("conv-%d-%d", phase, run))
		return
	}
	sp.SetParentSpanID(otlpSpanID(run, -1))
	sp.SetName("chat gpt-4o")
	sp.SetKind(ptrace.SpanKindClient)
	t0 := start + int64(chat)*int64(2*time.Second) + int64(100*time.Millisecond)
	sp.SetStartTimestamp(at(t0))
	sp.SetEndTimestamp(at(t0 + int64(1500*time.Millisecond)))

	input := []genAIMsg{{Role: "user", Parts: []map[string]any{{"type": "text", "content": fmt.Sprintf(
		"Order %d arrived damaged (the box was crushed, two mugs broken). I'd like a refund to my original card, not store credit. %s",
		1000+run, strings.Repeat("Please check the delivery photos I uploaded. ", 3))}}}}
	for j := range chat {
		id := fmt.Sprintf("call_%d_%d", run, j)
		input = append(input,
			genAIMsg{Role: "assistant", Parts: []map[string]any{{"type": "tool_call", "id": id, "name": "lookup_order",
				"arguments": map[string]any{"order_id": fmt.Sprint(1000 + run), "include": []string{"items", "shipments", "photos"}, "step": j}}}},
			genAIMsg{Role: "tool", Parts: []map[string]any{{"type": "tool_call_response", "id": id, "response": fmt.Sprintf(
				`{"order_id":"%d","status":"delivered","items":[{"sku":"MUG-%d","qty":2,"price_cents":1899}],"carrier":"UPS","photos":["s3://photos/%d/%d.jpg"],"note":"%s"}`,
				1000+run, j, run, j, strings.Repeat("customer reported damage; ", 6))}}})
	}
	var output []genAIMsg
	if chat < calls-1 {
		output = []genAIMsg{{Role: "assistant", FinishReason: "tool_call", Parts: []map[string]any{{"type": "tool_call", "id": fmt.Sprintf("call_%d_%d", run, chat),
			"name": "lookup_order", "arguments": map[string]any{"order_id": fmt.Sprint(1000 + run), "include": []string{"items", "shipments", "photos"}, "step": chat}}}}}
	} else {
		output = []genAIMsg{{Role: "assistant", FinishReason: "stop", Parts: []map[string]any{{"type": "text", "content": fmt.Sprintf(
			"I'm sorry about the broken mugs. I've refunded $37.98 for order %d to your original card; it should appear in 3–5 business days.", 1000+run)}}}}
	}
	in, _ := json.Marshal(input)
	out, _ := json.Marshal(output)
	a := sp.Attributes()
	a.PutStr("gen_ai.operation.name", "chat")
	a.PutStr("gen_ai.provider.name", "openai")
	a.PutStr("gen_ai.request.model", "gpt-4o")
	a.PutStr("gen_ai.response.model", "gpt-4o-2024-08-06")
	a.PutStr("gen_ai.response.id", fmt.Sprintf("chatcmpl-%d-%d", run, chat))
	a.PutInt("gen_ai.usage.input_tokens", int64(180+220*chat))
	a.PutInt("gen_ai.usage.output_tokens", 42)
	a.PutStr("gen_ai.input.messages", string(in))
	a.PutStr("gen_ai.output.messages", string(out))
}

// decodeInProcess is the receiver's work without HTTP, the event store or
// the read model: decode each request with pdata, split it into per-span
// records, and rebuild every touched trace from all the spans it has so far.
func decodeInProcess(tb testing.TB, bodies [][]byte) (spans int, d time.Duration) {
	stored := map[string]map[string]formats.RawSpan{}
	start := time.Now()
	for _, body := range bodies {
		req := ptraceotlp.NewExportRequest()
		require.NoError(tb, req.UnmarshalProto(body))
		raws, err := otlp.SplitPData(req.Traces())
		require.NoError(tb, err)
		spans += len(raws)
		var touched []string
		seen := map[string]bool{}
		for _, r := range raws {
			if !seen[r.TraceID] {
				seen[r.TraceID] = true
				touched = append(touched, r.TraceID)
			}
			if stored[r.TraceID] == nil {
				stored[r.TraceID] = map[string]formats.RawSpan{}
			}
			stored[r.TraceID][r.SpanID] = r
		}
		for _, tid := range touched {
			rebuildStored(tb, stored[tid])
		}
	}
	return spans, time.Since(start)
}

// rebuildStored rebuilds one trace from its stored spans in span-id order,
// as the receiver's command does after each request: the decode-only
// reference does the same work minus the HTTP and the event store.
func rebuildStored(tb testing.TB, spans map[string]formats.RawSpan) {
	ids := make([]string, 0, len(spans))
	for id := range spans {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	all := make([]formats.RawSpan, len(ids))
	for i, id := range ids {
		all[i] = spans[id]
	}
	_, _, err := formats.RebuildTrace(all)
	require.NoError(tb, err)
}

func postProto(url, key string, body []byte) error {
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Critic-Trace-Source", "support-agent")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || len(raw) != 0 {
		return fmt.Errorf("export: %d %s", resp.StatusCode, raw)
	}
	return nil
}

// sendAll posts bodies in order with `senders` concurrent exporters and
// returns how long it took until the last one was answered.
func sendAll(tb testing.TB, url, key string, bodies [][]byte, senders int) time.Duration {
	return fanOut(tb, bodies, senders, func(body []byte) error { return postProto(url, key, body) })
}

// fanOut hands items in order to `senders` concurrent workers running send,
// fails on any error, and returns how long it took until the last send was
// answered.
func fanOut[T any](tb testing.TB, items []T, senders int, send func(T) error) time.Duration {
	jobs := make(chan T)
	errs := make(chan error, len(items))
	var wg sync.WaitGroup
	start := time.Now()
	for range senders {
		wg.Go(func() {
			for it := range jobs {
				if err := send(it); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, it := range items {
		jobs <- it
	}
	close(jobs)
	wg.Wait()
	d := time.Since(start)
	close(errs)
	for err := range errs {
		require.NoError(tb, err)
	}
	return d
}

func runOTLPBench(b *testing.B) {
	in := startServe(b)
	key := in.newUser("otel-bench", false)
	url := in.url + otlp.Path
	seqBodies, seqRuns := otlpAgentRuns(1, otlpRequests)
	parBodies, parRuns := otlpAgentRuns(2, otlpRequests)
	var bytesPerReq int
	for _, body := range seqBodies {
		bytesPerReq += len(body)
	}
	bytesPerReq /= len(seqBodies)
	spans := otlpRequests * otlpBatchSpans

	// A warm-up trace so connection setup and first-use costs stay out.
	warm, _ := otlpAgentRuns(9, 1)
	require.NoError(b, postProto(url, key, warm[0]))
	visibleBefore := in.do("GET", "/api/v1/rm/traces?limit=1", key, nil).JSON(b)["total"].(float64)

	b.ResetTimer()
	seqDur := sendAll(b, url, key, seqBodies, 1)
	parDur := sendAll(b, url, key, parBodies, otlpBenchSenders)
	b.StopTimer()

	// Read-your-writes: every agent run is already listed, complete.
	list := in.do("GET", "/api/v1/rm/traces?limit=1", key, nil).JSON(b)
	require.Equal(b, visibleBefore+float64(seqRuns+parRuns), list["total"])
	for _, phase := range []byte{1, 2} {
		hexID := otlpTraceID(phase, 0).String()
		var id string
		require.NoError(b, in.pool.QueryRow(b.Context(), "SELECT id FROM rm_traces WHERE external_id = $1", hexID).Scan(&id))
		r := in.do("GET", "/api/v1/rm/traces/"+id, key, nil)
		require.Equal(b, http.StatusOK, r.Status)
		var d traceDetail
		require.NoError(b, json.Unmarshal(r.Body, &d))
		require.Len(b, d.Steps, 2*otlpChatsPerRun, "user, %d tool calls with results, the answer: history re-sent is not duplicated", otlpChatsPerRun-1)
		require.Len(b, d.Spans, otlpSpansPerRun)
		require.Equal(b, "support-agent", d.SourceID)
	}

	// The in-process limit on the same requests.
	decSpans, decDur := decodeInProcess(b, seqBodies)
	require.Equal(b, spans, decSpans)

	seqRate := float64(spans) / seqDur.Seconds()
	parRate := float64(spans) / parDur.Seconds()
	decRate := float64(decSpans) / decDur.Seconds()
	fmt.Printf("otlp: %d export requests × %d spans (protobuf, %.0f KiB each; %d agent runs, %d chat spans + 1 root each)\n",
		otlpRequests, otlpBatchSpans, float64(bytesPerReq)/1024, seqRuns, otlpChatsPerRun)
	fmt.Printf("otlp: end to end, 1 sender:  %s = %.0f spans/s (%.0f ms per request)\n",
		seqDur.Round(time.Millisecond), seqRate, seqDur.Seconds()*1000/otlpRequests)
	fmt.Printf("otlp: end to end, %d senders: %s = %.0f spans/s\n", otlpBenchSenders, parDur.Round(time.Millisecond), parRate)
	fmt.Printf("otlp: in-process decode (pdata UnmarshalProto + SplitPData + RebuildTrace per touched trace): %s = %.0f spans/s\n",
		decDur.Round(time.Millisecond), decRate)
	fmt.Printf("otlp: ratio end to end / in-process = %.3f (1 sender), %.3f (%d senders)\n", seqRate/decRate, parRate/decRate, otlpBenchSenders)
	b.ReportMetric(seqRate, "spans/s-1sender")
	b.ReportMetric(parRate, "spans/s-4senders")
	b.ReportMetric(decRate, "spans/s-inprocess")

	runOTLPLogsBench(b, in, key)
	runOTLPContentionBench(b, in, key)
}
