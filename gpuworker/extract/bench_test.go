package extract_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
)

// BenchmarkExtract (make bench-extract) extracts 200 traces × 10 assistant
// actions against the test server answering every call after 200 ms, and
// prints the calls/s reached beside the ideal the concurrency limits allow
// — the global cap divided by the single-call latency measured in the same
// run — and their ratio (target ≥ 0.8).
func BenchmarkExtract(b *testing.B) {
	const (
		traces, actions = 200, 10
		latency         = 200 * time.Millisecond
		globalCap       = 32
	)
	srv := llmtest.New(b)
	srv.SetLatency(latency)
	srv.Handle(func(req llmtest.Request) llmtest.Reply {
		return llmtest.JSON(map[string]any{"label": "unclear", "confidence": "low", "alternative": nil, "reason": "cannot tell"})
	})
	client := llm.New(llm.Model{Provider: "openai", Name: "bench", APIBase: srv.URL}, llm.Options{Concurrency: globalCap})
	var trs []feedback.Trace
	for i := range traces {
		tr := feedback.Trace{ID: fmt.Sprintf("t%03d", i), Revision: 1, Steps: []domain.PairStep{{ID: fmt.Sprintf("t%03d-u", i), Role: domain.RoleUser, Content: "Do the task"}}}
		for k := range actions {
			tr.Steps = append(tr.Steps, domain.PairStep{ID: fmt.Sprintf("t%03d-a%d", i, k), Role: domain.RoleAssistant, Content: fmt.Sprintf("step %d done", k)})
		}
		trs = append(trs, tr)
	}
	// Reference: one call at a time, same server, same run.
	ref := time.Now()
	for range 5 {
		if _, err := client.Call(context.Background(), llm.Request{Name: "judgment", Input: "x", Schema: extractJudgmentSchema()}); err != nil {
			b.Fatal(err)
		}
	}
	single := time.Since(ref) / 5
	limit := float64(globalCap) / single.Seconds()
	b.ResetTimer()
	for range b.N {
		before := srv.Calls()
		start := time.Now()
		rep := &recorder{}
		x := newExtractorFor(client)
		if err := x.Run(context.Background(), inputs(trs...), rep, 0); err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		calls := srv.Calls() - before
		rate := float64(calls) / el.Seconds()
		b.ReportMetric(rate, "calls/s")
		b.ReportMetric(rate/limit, "ratio")
		fmt.Printf("extract: %d traces × %d actions, %d calls in %.1fs = %.1f calls/s; limit %.1f calls/s (%d in flight / %s per call, measured); ratio %.2f (target >= 0.80); max in flight %d\n",
			traces, actions, calls, el.Seconds(), rate, limit, globalCap, single.Round(time.Millisecond), rate/limit, srv.MaxInFlight())
	}
}
