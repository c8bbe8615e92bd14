package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/handlers/otlp"
)

// The logs path of `make bench-otlp`: @opentelemetry/instrumentation-openai's
// shape, chat spans without content and every message as a GenAI log record
// (the history re-sent per call), each batch of spans exported with the log
// records of the same calls. Spans plus log records per second end to end
// against the in-process limit (pdata decode, split, rebuild of every touched
// trace from all its spans and records) on the same requests.

const otlpLogRequests = 10 // span requests; as many log requests

// otlpLogAgentRuns builds otlpAgentRuns' runs as the logs instrumentation
// exports them: bodies alternate a traces request (up to 512 spans, no
// message attributes) and the logs request of the same calls.
func otlpLogAgentRuns(phase byte, requests int) (bodies []otlpBody, spans, records, runs int) {
	traces, runs := otlpAgentRuns(phase, requests)
	for _, body := range traces {
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			panic(err)
		}
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", "support-agent")
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName("@opentelemetry/instrumentation-openai")
		ss := req.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		for i := 0; i < ss.Len(); i++ {
			sp := ss.At(i)
			spans++
			a := sp.Attributes()
			in, hasIn := a.Get("gen_ai.input.messages")
			out, _ := a.Get("gen_ai.output.messages")
			if !hasIn {
				continue // the root span
			}
			records += genAIMessageLogs(sl, sp, in.Str(), out.Str())
			a.Remove("gen_ai.input.messages")
			a.Remove("gen_ai.output.messages")
		}
		tb, err := req.MarshalProto()
		if err != nil {
			panic(err)
		}
		lb, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
		if err != nil {
			panic(err)
		}
		bodies = append(bodies, otlpBody{path: otlp.Path, body: tb}, otlpBody{path: otlpLogsPath, body: lb})
	}
	return bodies, spans, records, runs
}

const otlpLogsPath = "/api/v1/rm/otel/v1/logs"

type otlpBody struct {
	path string
	body []byte
}

// genAIMessageLogs appends one log record per message of a chat call (the
// re-sent history, then gen_ai.choice) as instrumentation-openai does, and
// returns how many.
func genAIMessageLogs(sl plog.ScopeLogs, sp ptrace.Span, input, output string) int {
	var in, out []genAIMsg
	if json.Unmarshal([]byte(input), &in) != nil || json.Unmarshal([]byte(output), &out) != nil {
		panic("bench messages are JSON")
	}
	n := 0
	add := func(name string, body map[string]any) {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTraceID(sp.TraceID())
		lr.SetSpanID(sp.SpanID())
		lr.SetTimestamp(pcommon.Timestamp(uint64(sp.StartTimestamp()) + uint64(n)))
		lr.SetEventName(name)
		lr.Attributes().PutStr("event.name", name)
		lr.Attributes().PutStr("gen_ai.system", "openai")
		if err := lr.Body().SetEmptyMap().FromRaw(body); err != nil {
			panic(err)
		}
		n++
	}
	toolCalls := func(m genAIMsg) []any {
		var calls []any
		for _, p := range m.Parts {
			if p["type"] == "tool_call" {
				calls = append(calls, map[string]any{"id": p["id"], "type": "function", "function": map[string]any{"name": p["name"], "arguments": mustJSON(p["arguments"])}})
			}
		}
		return calls
	}
	for _, m := range in {
		switch m.Role {
		case "user":
			add("gen_ai.user.message", map[string]any{"content": m.Parts[0]["content"]})
		case "assistant":
			add("gen_ai.assistant.message", map[string]any{"tool_calls": toolCalls(m)})
		case "tool":
			add("gen_ai.tool.message", map[string]any{"id": m.Parts[0]["id"], "content": m.Parts[0]["response"]})
		}
	}
	for _, m := range out {
		msg := map[string]any{}
		if calls := toolCalls(m); len(calls) > 0 {
			msg["tool_calls"] = calls
		} else {
			msg["content"] = m.Parts[0]["content"]
		}
		add("gen_ai.choice", map[string]any{"index": 0, "finish_reason": m.FinishReason, "message": msg})
	}
	return n
}

// decodeLogsInProcess is the receiver's work on spans and log records
// without HTTP, the event store or the read model.
func decodeLogsInProcess(tb testing.TB, bodies []otlpBody) (records int, d time.Duration) {
	stored := map[string]map[string]formats.RawSpan{}
	start := time.Now()
	for _, b := range bodies {
		var raws []formats.RawSpan
		if b.path == otlpLogsPath {
			req := plogotlp.NewExportRequest()
			require.NoError(tb, req.UnmarshalProto(b.body))
			var err error
			raws, _, _, err = otlp.SplitPLogs(req.Logs())
			require.NoError(tb, err)
		} else {
			req := ptraceotlp.NewExportRequest()
			require.NoError(tb, req.UnmarshalProto(b.body))
			var err error
			raws, err = otlp.SplitPData(req.Traces())
			require.NoError(tb, err)
		}
		records += len(raws)
		var touched []string
		for _, r := range raws {
			if stored[r.TraceID] == nil {
				stored[r.TraceID] = map[string]formats.RawSpan{}
				touched = append(touched, r.TraceID)
			} else if len(touched) == 0 || touched[len(touched)-1] != r.TraceID {
				touched = append(touched, r.TraceID)
			}
			stored[r.TraceID][r.SpanID] = r
		}
		seen := map[string]bool{}
		for _, tid := range touched {
			if seen[tid] {
				continue
			}
			seen[tid] = true
			rebuildStored(tb, stored[tid])
		}
	}
	return records, time.Since(start)
}

// sendPairs posts each traces request and then its logs request, by
// `senders` concurrent exporters (one pair per sender at a time, as one
// process's span and log exporters).
func sendPairs(tb testing.TB, base, key string, bodies []otlpBody, senders int) time.Duration {
	var pairs [][]otlpBody
	for i := 0; i < len(bodies); i += 2 {
		pairs = append(pairs, bodies[i:i+2])
	}
	return fanOut(tb, pairs, senders, func(pair []otlpBody) error {
		for _, b := range pair {
			if err := postProtoAccepted(base+b.path, key, b.body); err != nil {
				return err
			}
		}
		return nil
	})
}

// postProtoAccepted is postProto for a request that may answer a partial
// success body (a logs request names nothing rejected; any rejection fails).
func postProtoAccepted(url, key string, body []byte) error {
	r, err := sendOTLP(url, "Bearer "+key, "application/x-protobuf", body)
	if err != nil {
		return err
	}
	if r.Status != http.StatusOK {
		return fmt.Errorf("export: %d %s", r.Status, r.Body)
	}
	return nil
}

func runOTLPLogsBench(b *testing.B, in *instance, key string) {
	bodies, spans, records, runs := otlpLogAgentRuns(3, otlpLogRequests)
	visibleBefore := in.do("GET", "/api/v1/rm/traces?limit=1", key, nil).JSON(b)["total"].(float64)
	dur := sendPairs(b, in.url, key, bodies, otlpBenchSenders)
	list := in.do("GET", "/api/v1/rm/traces?limit=1", key, nil).JSON(b)
	require.Equal(b, visibleBefore+float64(runs), list["total"], "every run listed")
	d := benchTrace(b, in, key, otlpTraceID(3, 0).String())
	require.Len(b, d.Steps, 2*otlpChatsPerRun, "user, %d tool calls with results, the answer, from log records", otlpChatsPerRun-1)

	decRecs, decDur := decodeLogsInProcess(b, bodies)
	require.Equal(b, spans+records, decRecs)
	rate := float64(spans+records) / dur.Seconds()
	decRate := float64(decRecs) / decDur.Seconds()
	fmt.Printf("otlp logs: %d traces + %d logs requests (protobuf; %d spans, %d GenAI log records; %d agent runs)\n",
		otlpLogRequests, otlpLogRequests, spans, records, runs)
	fmt.Printf("otlp logs: end to end, %d senders: %s = %.0f spans+logs/s\n", otlpBenchSenders, dur.Round(time.Millisecond), rate)
	fmt.Printf("otlp logs: in-process decode (pdata + SplitPData/SplitPLogs + RebuildTrace per touched trace): %s = %.0f spans+logs/s\n",
		decDur.Round(time.Millisecond), decRate)
	fmt.Printf("otlp logs: ratio end to end / in-process = %.3f (goal >= 0.5)\n", rate/decRate)
	b.ReportMetric(rate, "records/s-logs")
	b.ReportMetric(rate/decRate, "ratio-logs")
}

// The contention run: a SimpleSpanProcessor (or Langfuse's immediate mode)
// in many processes at once: every span its own request, all the requests
// of many traces in flight together, so each trace is written by several
// requests at the same time. Throughput and p99 latency; no request may
// fail (a 409 or 503 is a failure here).
const (
	otlpContendedTraces  = 40
	otlpContendedSenders = 64
)

func runOTLPContentionBench(b *testing.B, in *instance, key string) {
	var bodies [][]byte
	// Interleaved: span c of every trace, then span c+1 of every trace, so
	// the requests of one trace are in flight together.
	for c := range otlpSpansPerRun {
		for run := range otlpContendedTraces {
			chat := c
			if c == otlpChatsPerRun {
				chat = -1
			}
			td := ptrace.NewTraces()
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", "support-agent")
			fillAgentSpan(rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty(), 4, run, chat, otlpChatsPerRun,
				time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC).UnixNano()+int64(run)*int64(time.Minute))
			body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
			require.NoError(b, err)
			bodies = append(bodies, body)
		}
	}
	jobs := make(chan []byte)
	var mu sync.Mutex
	var lat []time.Duration
	var failed []string
	var wg sync.WaitGroup
	start := time.Now()
	for range otlpContendedSenders {
		wg.Go(func() {
			for body := range jobs {
				t := time.Now()
				err := postProto(in.url+otlp.Path, key, body)
				d := time.Since(t)
				mu.Lock()
				lat = append(lat, d)
				if err != nil {
					failed = append(failed, err.Error())
				}
				mu.Unlock()
			}
		})
	}
	for _, body := range bodies {
		jobs <- body
	}
	close(jobs)
	wg.Wait()
	dur := time.Since(start)
	require.Empty(b, failed, "no request may fail")
	for _, run := range []int{0, otlpContendedTraces - 1} {
		d := benchTrace(b, in, key, otlpTraceID(4, run).String())
		require.Len(b, d.Steps, 2*otlpChatsPerRun, "every span of the trace applied")
		require.Len(b, d.Spans, otlpSpansPerRun)
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	rate := float64(len(bodies)) / dur.Seconds()
	fmt.Printf("otlp contention: %d traces × %d spans, each span its own request, %d concurrent senders: %s = %.0f spans/s; latency p50 %s, p99 %s, max %s; 0 of %d failed\n",
		otlpContendedTraces, otlpSpansPerRun, otlpContendedSenders, dur.Round(time.Millisecond), rate,
		p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), len(bodies))
	b.ReportMetric(rate, "spans/s-contended")
	b.ReportMetric(float64(p(0.99).Milliseconds()), "p99-ms-contended")
}

// benchTrace is the trace with an external id among the bench's many.
func benchTrace(b *testing.B, in *instance, key, external string) traceDetail {
	var id string
	require.NoError(b, in.pool.QueryRow(b.Context(), "SELECT id FROM rm_traces WHERE external_id = $1", external).Scan(&id))
	return in.getTrace(b, key, id)
}
