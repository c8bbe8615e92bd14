// Package labeltest scripts the step-label model on the llmtest server: a
// reply that labels whatever chunk a labeling call names, the way a model
// that follows the prompt would, so tests and benchmarks of the labeler,
// the worker and the whole stack share one scripted model.
package labeltest

import (
	"fmt"
	"regexp"

	"github.com/criticml/critic/platform/llm/llmtest"
)

var (
	target = regexp.MustCompile(`Label the chunk with id "([^"]+)" \(actor (user|agent)\)`)
)

// Target is the chunk id and actor a labeling request names ("" when the
// request is not a labeling call).
func Target(r llmtest.Request) (id, actor string) {
	m := target.FindStringSubmatch(r.Last())
	if m == nil {
		return "", ""
	}
	return m[1], m[2]
}

// Reply labels the target of r: a user chunk as a request, an agent tool
// call as a successful lookup, an agent message as a confident, full
// answer. A request that is not a labeling call gets a 400 naming it.
func Reply(r llmtest.Request) llmtest.Reply {
	id, actor := Target(r)
	if id == "" {
		return llmtest.Status(400)
	}
	if actor == "user" {
		return llmtest.JSON(map[string]any{"chunk_id": id, "task_id": "t1", "actor": "user", "intent": "request",
			"verdict": "none", "verdict_target": nil, "sentiment": "neutral", "evidence": "", "note": ""})
	}
	kind := regexp.MustCompile(fmt.Sprintf(`<chunk id=%q actor="agent" kind="([a-z_]+)">`, id)).FindStringSubmatch(r.Text())
	if kind != nil && kind[1] == "tool_call" {
		return llmtest.JSON(map[string]any{"chunk_id": id, "task_id": "t1", "actor": "agent", "type": "tool_call", "effect": "lookup",
			"result": "ok", "duplicate_of": nil, "is_output": false, "outcome": "none", "stance": "none", "coverage": "none", "evidence": "", "note": ""})
	}
	return llmtest.JSON(map[string]any{"chunk_id": id, "task_id": "t1", "actor": "agent", "type": "answer", "effect": "none",
		"result": "none", "duplicate_of": nil, "is_output": true, "outcome": "solved", "stance": "confident", "coverage": "full", "evidence": "", "note": ""})
}
