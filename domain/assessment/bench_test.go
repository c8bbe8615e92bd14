package assessment

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/criticml/critic/domain"
)

// largeSession is a Claude-Code-sized trace: 2,640 steps, a third tool
// calls with shell commands, a third 9 KB results, a third 9 KB messages,
// every chunk labeled.
func largeSession() ([]domain.Step, []string) {
	var steps []domain.Step
	var ids []string
	for i := 0; len(steps) < 2640; i++ {
		call := fmt.Sprint("c", i)
		task := fmt.Sprint("t", i/40)
		steps = append(steps,
			domain.Step{Role: domain.RoleAssistant, ToolName: "Bash", ToolInput: map[string]any{"command": "go test ./..." + strings.Repeat(" -v", 50)}, ToolCallID: call,
				Metadata: map[string]any{"label": map[string]any{"chunk_id": call, "task_id": task, "actor": "agent", "type": "tool_call", "effect": "lookup",
					"result": "ok", "duplicate_of": nil, "is_output": false, "outcome": "none", "stance": "none", "coverage": "none", "evidence": "", "note": ""}}},
			domain.Step{Role: domain.RoleTool, Content: strings.Repeat("ok ", 3000), ToolCallID: call},
			domain.Step{Role: domain.RoleAssistant, Content: strings.Repeat("done ", 1800),
				Metadata: map[string]any{"label": map[string]any{"chunk_id": "m" + call, "task_id": task, "actor": "agent", "type": "answer", "effect": "none",
					"result": "none", "duplicate_of": nil, "is_output": true, "outcome": "solved", "stance": "confident", "coverage": "full", "evidence": "", "note": ""}}})
	}
	for i := range steps {
		ids = append(ids, fmt.Sprint("s", i))
	}
	return steps, ids
}

// BenchmarkAssessLargeSession measures what the automatic annotation adds
// to GET /traces/{id} of a large session, against the reference measured in
// the same run: encoding that trace's steps as JSON, which every GET does.
func BenchmarkAssessLargeSession(b *testing.B) {
	steps, ids := largeSession()
	measure := func(fn func()) time.Duration {
		fn()
		const n = 10
		start := time.Now()
		for range n {
			fn()
		}
		return time.Since(start) / n
	}
	for i := 0; i < b.N; i++ {
		ref := measure(func() { _, _ = json.Marshal(steps) })
		got := measure(func() { _ = Of(steps, ids, nil, nil, nil) })
		b.ReportMetric(float64(got.Microseconds())/1000, "assess-ms")
		b.ReportMetric(float64(ref.Microseconds())/1000, "encode-ms")
		b.ReportMetric(float64(got)/float64(ref), "ratio")
	}
}
