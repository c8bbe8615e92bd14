package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/handlers/otlp"
)

// BenchmarkOTLPSession is bench-otlp's long agent run: BENCH_OTLP_SESSION_CALLS
// (default 150) chat calls of one run, each exported alone as a
// SimpleSpanProcessor sends it, each call's input re-sending the whole
// conversation so far (as the GenAI conventions record it), then the root
// span. It prints the latency of the first and the last ten exports, their
// ratio, the last ones beside one in-process rebuild of the whole run
// (what every export did before the receiver kept conversations folded and
// decoded between exports), the root span's export (which reorders the
// tree), and the bytes the run wrote to the event log beside the bytes it
// sent. Revisions that repeated the whole span tree made the log grow with
// the square of the run and the 200th export take 13 s, past an exporter's
// 10 s timeout; rebuilding from every span on each export made the 300th
// take 2.9 s and the root of a 600-call run answer 503.
func BenchmarkOTLPSession(b *testing.B) {
	for range b.N {
		in := startServe(b)
		runOTLPSessionBench(b, in, in.newUser("otel-session", false))
	}
}

func runOTLPSessionBench(b *testing.B, in *instance, key string) {
	calls := benchEnvInt(b, "BENCH_OTLP_SESSION_CALLS", 150)
	url := in.url + otlp.Path
	tid := otlpTraceID(5, 0)
	base := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC).UnixNano()
	var sent int
	var raws []formats.RawSpan
	lat := make([]time.Duration, 0, calls)
	var rootLat time.Duration
	for c := 0; c <= calls; c++ {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "support-agent")
		chat := c
		if c == calls {
			chat = -1 // the run's root span, last: it ends after every call
		}
		fillAgentSpan(rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty(), 5, 0, chat, calls, base)
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		require.NoError(b, err)
		r, err := otlp.SplitPData(td)
		require.NoError(b, err)
		raws = append(raws, r...)
		sent += len(body)
		start := time.Now()
		require.NoError(b, postProto(url, key, body), "export %d of %d", c, calls)
		if c < calls { // the root span, last, is not a call
			lat = append(lat, time.Since(start))
		} else {
			rootLat = time.Since(start)
		}
	}

	var traceID string
	require.NoError(b, in.pool.QueryRow(b.Context(), "SELECT id FROM rm_traces WHERE external_id = $1", tid.String()).Scan(&traceID))
	r := in.do("GET", "/api/v1/rm/traces/"+traceID, key, nil)
	require.Equal(b, 200, r.Status, string(r.Body))
	var d traceDetail
	require.NoError(b, json.Unmarshal(r.Body, &d))
	require.Len(b, d.Spans, calls+1)
	require.Len(b, d.Steps, 2*calls, "the request, every tool call and its result, the answer")

	var logged int64
	require.NoError(b, in.pool.QueryRow(b.Context(), `SELECT sum(COALESCE((payload->'claim_check'->>'size')::bigint, octet_length(payload::text)))
		FROM events WHERE stream = $1`, events.TraceStream(traceID)).Scan(&logged))
	var spanIO, stepText int64
	require.NoError(b, in.pool.QueryRow(b.Context(), `SELECT COALESCE(sum(pg_column_size(input) + pg_column_size(output)), 0)
		FROM rm_spans WHERE trace_id = $1`, traceID).Scan(&spanIO))
	require.NoError(b, in.pool.QueryRow(b.Context(), `SELECT COALESCE(sum(pg_column_size(s)), 0)
		FROM rm_steps s WHERE trace_id = $1`, traceID).Scan(&stepText))

	start := time.Now()
	_, _, err := formats.RebuildTrace(raws)
	require.NoError(b, err)
	rebuild := time.Since(start)

	p50 := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	k := min(10, calls/2)
	first, last := p50(lat[:k]), p50(lat[len(lat)-k:])
	fmt.Printf("otlp session: %d chat calls of one run, each exported alone (the last one's input %.0f KiB), then the root span\n",
		calls, float64(len(raws[calls-1].JSON))/1024)
	fmt.Printf("otlp session: export latency p50, first %d: %s, last %d: %s; ratio last/first = %.1f\n",
		k, first.Round(100*time.Microsecond), k, last.Round(100*time.Microsecond), last.Seconds()/first.Seconds())
	fmt.Printf("otlp session: the root span's export (it moves every stored span after it) %s\n", rootLat.Round(100*time.Microsecond))
	fmt.Printf("otlp session: one in-process rebuild of the whole run %s; ratio last export / rebuild = %.3f\n",
		rebuild.Round(100*time.Microsecond), last.Seconds()/rebuild.Seconds())
	fmt.Printf("otlp session: event log %.1f MiB as stored (compressed, sealed) for %.1f MiB sent (ratio %.2f)\n",
		float64(logged)/(1<<20), float64(sent)/(1<<20), float64(logged)/float64(sent))
	fmt.Printf("otlp session: read model %.1f MiB of span input/output and %.1f MiB of steps as stored (TOAST-compressed)\n",
		float64(spanIO)/(1<<20), float64(stepText)/(1<<20))
	b.ReportMetric(last.Seconds()*1000, "ms/export-last")
	b.ReportMetric(float64(logged)/float64(sent), "log/sent")
}
