package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
)

// BenchmarkComparisonQueueModels (make bench-comparisons): GET
// /comparisons/queue for an account whose two models scored 2,000 traces
// (200 prompts, ten rollouts each; the models prefer different answers to
// every prompt), against reading the same data from the log — one
// LoadStreams of every trace stream and both score streams, which is what
// the queue's models half has to read — median of 5 each, alternating;
// ratio queue/read.
func BenchmarkComparisonQueueModels(b *testing.B) {
	e := startOps(b, nil)
	ctx := context.Background()
	const traces, prompts = 2000, 200
	lines := make([]string, traces)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"id":"r%d","steps":[{"role":"user","content":"Task %d"},{"role":"assistant","content":"Answer %d"}]}`, i, i%prompts, i)
	}
	r := e.do(b, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": strings.Join(lines, "\n")})
	require.Equal(b, http.StatusOK, r.status, string(r.body))
	var imp struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(b, json.Unmarshal(r.body, &imp))
	require.Len(b, imp.TraceIDs, traces)
	traceOf := map[string]string{}
	sa, sb := map[string]float64{}, map[string]float64{}
	for i, id := range imp.TraceIDs {
		s := e.stepID(b, id, 1)
		traceOf[s] = id
		// Rollout k of a prompt: a ranks it k, b ranks it 9 − k.
		k := float64(i / prompts)
		sa[s], sb[s] = k, 9-k
		if i < 2 { // pairs for both models to train on
			for _, body := range []map[string]any{{"rating": 1 - 2*i}, {"step_id": s, "rating": 1 - 2*i}} {
				r := e.do(b, "POST", "/api/v1/rm/traces/"+id+"/annotations", body)
				require.Equal(b, http.StatusOK, r.status, string(r.body))
			}
		}
	}
	ma := scoredModel(b, e, "a", imp.TraceIDs, sa, traceOf)
	mb := scoredModel(b, e, "b", imp.TraceIDs, sb, traceOf)

	streams := []string{events.ScoresStream(ma), events.ScoresStream(mb)}
	for _, id := range imp.TraceIDs {
		streams = append(streams, events.TraceStream(id))
	}
	queue := func() time.Duration {
		t0 := time.Now()
		r := e.do(b, "GET", "/api/v1/rm/comparisons/queue", nil)
		d := time.Since(t0)
		require.Equal(b, http.StatusOK, r.status, string(r.body))
		var q queueReply
		require.NoError(b, json.Unmarshal(r.body, &q))
		require.Len(b, q.Items, 20, "a full page of model disagreements")
		require.Equal(b, "models", q.Items[0].Source)
		return d
	}
	read := func() time.Duration {
		t0 := time.Now()
		loaded, err := e.store.LoadStreams(ctx, streams)
		d := time.Since(t0)
		require.NoError(b, err)
		require.Len(b, loaded, len(streams))
		return d
	}
	queue() // warm both paths once
	read()
	b.ResetTimer()
	var qs, rs []time.Duration
	for range 5 {
		qs = append(qs, queue())
		rs = append(rs, read())
	}
	b.StopTimer()
	slices.Sort(qs)
	slices.Sort(rs)
	q, rd := qs[2], rs[2]
	fmt.Printf("bench-comparisons: %d traces scored by 2 models: GET /comparisons/queue %.0f ms, reading the same streams from the log %.0f ms, ratio %.2f\n",
		traces, ms(q), ms(rd), float64(q)/float64(rd))
	b.ReportMetric(float64(q)/float64(rd), "queue/read")
	b.ReportMetric(ms(q), "queue-ms")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
