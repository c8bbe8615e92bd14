package gepa

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/llm/llmtest"
)

// BenchmarkGEPA (make bench-gepa) runs a 40-call search on 6 examples with
// the test server answering every task and reflection call after 300 ms,
// and prints the wall time beside the time the calls alone need at the
// run's concurrency — one call latency (measured in the same run) per
// sequential phase: naming, the seed's evaluation, each reflection call,
// each minibatch and each full evaluation, every phase's examples in
// parallel — and their ratio (target ≤ 1.25). The reward model's scoring
// and the bookkeeping are what the ratio charges above 1.
func BenchmarkGEPA(b *testing.B) {
	const latency = 300 * time.Millisecond
	dir := trainedModelB(b)
	task, refl := llmtest.New(b), llmtest.New(b)
	task.SetLatency(latency)
	refl.SetLatency(latency)
	task.Handle(followSkill)
	var n atomic.Int64
	refl.Handle(func(req llmtest.Request) llmtest.Reply {
		if cur, ok := extractTag(req.Last(), "current_skill_body"); ok && strings.Contains(cur, "check the order") {
			return llmtest.Reply{Content: openBody + "\n" + cur + fmt.Sprintf("\n- Variant %d.", n.Add(1)) + "\n" + closeBody}
		}
		return reflect(req)
	})
	tc := llm.New(llm.Model{Provider: "openai", Name: "task", APIBase: task.URL}, llm.Options{})
	rc := llm.New(llm.Model{Provider: "openai", Name: "reflection", APIBase: refl.URL}, llm.Options{})
	sc := scorerFrom(b, dir)
	ref := time.Now()
	for range 3 {
		if _, err := tc.Chat(context.Background(), []llm.ChatMessage{{Role: "user", Content: "hi"}}, 16); err != nil {
			b.Fatal(err)
		}
	}
	single := time.Since(ref) / 3
	b.ResetTimer()
	for range b.N {
		reports := 0
		start := time.Now()
		res, err := Optimize(context.Background(), Config{Examples: examples(6), Task: tc, Reflection: rc, Scorer: sc,
			MaxMetricCalls: 40, OnCandidate: func(CandidateReport) { reports++ }})
		if err != nil {
			b.Fatal(err)
		}
		wall := time.Since(start)
		phases := 2 + res.Proposals + reports + res.Accepted
		limit := time.Duration(phases) * single
		b.ReportMetric(wall.Seconds()/limit.Seconds(), "ratio")
		fmt.Printf("gepa: 6 examples, %d/%d metric calls, %d proposals (%d evaluated, %d accepted); wall %.2fs; calls alone at the run's concurrency %.2fs (%d sequential phases × %s per call, measured); ratio %.2f (target <= 1.25); max task calls in flight %d\n",
			res.MetricCalls, res.MaxMetricCalls, res.Proposals, reports, res.Accepted, wall.Seconds(), limit.Seconds(), phases,
			single.Round(time.Millisecond), wall.Seconds()/limit.Seconds(), task.MaxInFlight())
	}
}
