package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/criticml/critic/platform/llm/llmtest"
)

// webGepaModels starts the scripted task and reflection models the browser
// suite's GEPA run uses (as in TestGepaRunEndToEnd): the task model follows
// the instruction it finds in its system message (look the order up before
// promising a refund, which the trained model prefers) and the reflection
// model names the skill and proposes a body that says so, a new one for each
// body already rejected. The task model is reached through the run's task
// API base (typed into the form); the reflection model through the worker's
// OPENAI_BASE_URL.
//
// So that the browser can watch a run in progress without racing it, the
// task model holds every call after the seed's four (one per example) until
// the file at gate exists, which the browser test writes once it has seen
// the run's progress (at most two minutes, so a failed test cannot hang).
func webGepaModels(t *testing.T) (taskURL, reflectionURL, gate string) {
	task, refl := llmtest.New(t), llmtest.New(t)
	gate = filepath.Join(t.TempDir(), "gepa-gate")
	var calls atomic.Int64
	task.Handle(func(r llmtest.Request) llmtest.Reply {
		if calls.Add(1) > 4 {
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if _, err := os.Stat(gate); err == nil {
					break
				}
			}
		}
		if strings.Contains(r.Messages[0].Content, "look the order up") {
			return llmtest.Reply{Content: "Your order was delivered; I started the refund within policy."}
		}
		return llmtest.Reply{Content: "Sure! Refund issued, no questions asked."}
	})
	refl.Handle(func(r llmtest.Request) llmtest.Reply {
		p := r.Last()
		if strings.Contains(p, "You are naming a skill") {
			return llmtest.Reply{Content: "<name>refund-policy</name>\n<description>Use when a customer asks for a refund.</description>"}
		}
		n := strings.Count(p, "<rejected ")
		return llmtest.Reply{Content: "<new_skill_body>\n## Refunds\n\nBefore promising a refund, **look the order up** with `lookup_order`.\n" +
			strings.Repeat("Check the delivery date.\n", n) + "</new_skill_body>"}
	})
	return task.URL, refl.URL, gate
}
