package label_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/gpuworker/label"
	"github.com/criticml/critic/gpuworker/label/labeltest"
	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
)

// BenchmarkLabel (make bench-label) labels 100 traces × 50 chunks against
// the test server answering every call after 200 ms, the way one worker
// runs label jobs (worker.DefaultLabelJobs traces at once, sharing one
// step-label client and its concurrency cap), and prints the chunks/s
// reached beside the limit that cap allows — cap ÷ the single-call latency
// measured in the same run — and their ratio (target ≥ 0.8).
func BenchmarkLabel(b *testing.B) {
	const (
		traces    = 100
		latency   = 200 * time.Millisecond
		globalCap = 16 // CRITIC_LLM_CONCURRENCY's default
		jobs      = 4  // worker.DefaultLabelJobs
	)
	srv := llmtest.New(b)
	srv.SetLatency(latency)
	srv.Handle(labeltest.Reply)
	client := llm.New(llm.Model{Provider: "openai", Name: "bench", APIBase: srv.URL}, llm.Options{Concurrency: globalCap})
	lab := label.New(client, labels.DefaultLimits)
	steps := session(24) // user + 24 tool calls + answer: 26 chunks…
	for len(labels.Chunks(steps)) < 50 {
		steps = append(steps, steps[len(steps)-1]) // …then answers until 50
	}
	if n := len(labels.Chunks(steps)); n != 50 {
		b.Fatalf("%d chunks", n)
	}
	// Reference: one call at a time (a one-chunk trace), same server, same run.
	one := steps[:1]
	ref := time.Now()
	for range 5 {
		if res, err := lab.Label(context.Background(), one, nil, func(context.Context, []labels.Label, llm.Usage) error { return nil }); err != nil || res.Labeled != 1 {
			b.Fatal(err, res.Err)
		}
	}
	single := time.Since(ref) / 5
	limit := float64(globalCap) / single.Seconds()
	b.ResetTimer()
	for range b.N {
		before := srv.Calls()
		start := time.Now()
		queue := make(chan int)
		var wg sync.WaitGroup
		var mu sync.Mutex
		labeled := 0
		for range jobs {
			wg.Go(func() {
				for range queue {
					res, err := lab.Label(context.Background(), steps, nil, func(context.Context, []labels.Label, llm.Usage) error { return nil })
					if err != nil || len(res.Failed) > 0 {
						b.Errorf("label: %v %v", err, res.Err)
					}
					mu.Lock()
					labeled += res.Labeled
					mu.Unlock()
				}
			})
		}
		for i := range traces {
			queue <- i
		}
		close(queue)
		wg.Wait()
		el := time.Since(start)
		calls := srv.Calls() - before
		rate := float64(labeled) / el.Seconds()
		b.ReportMetric(rate, "chunks/s")
		b.ReportMetric(rate/limit, "ratio")
		fmt.Printf("label: %d traces × 50 chunks, %d chunks labeled with %d calls in %.1fs = %.1f chunks/s; limit %.1f chunks/s (%d in flight / %s per call, measured); ratio %.2f (target >= 0.80); %d traces at once; max in flight %d\n",
			traces, labeled, calls, el.Seconds(), rate, limit, globalCap, single.Round(time.Millisecond), rate/limit, jobs, srv.MaxInFlight())
	}
}
