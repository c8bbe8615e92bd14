package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/criticml/critic/platform/llm/llmtest"
)

var (
	webSectionRe = regexp.MustCompile(`<section first="([^"]+)"`)
	webTaskRe    = regexp.MustCompile(`<task index="`)
	webEventRe   = regexp.MustCompile(`<event step="([^"]+)" role="(\w+)">`)
)

// webAssessor starts the browser suite's fast model (CRITIC_FAST_MODEL),
// scripted so the viewer's section breadcrumbs and completion curve have
// something to show that a test can predict: a section is titled "Reviewed
// part <first 8 characters of its first step id>" (so a title shown in a
// breadcrumb proves it was bound to that exact range); it scores 0.8 when
// it holds the labeled trace's answer ("refund is on its way") and is
// Unscored, with the reason, otherwise. A single-request trace gets one
// checkpoint per assistant event in the evidence, from 0.4 rising evenly
// to 0.9, with the first user message as the objective. Titles are refused
// (the derived titles the other pages expect stay).
func webAssessor(t *testing.T) string {
	srv := llmtest.New(t)
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		if r.SchemaName != "assessment" {
			return llmtest.Status(400)
		}
		p := r.Last()
		if strings.HasPrefix(r.Messages[0].Content, "You assess one section") {
			m := webSectionRe.FindStringSubmatch(p)
			if m == nil {
				return llmtest.Status(400)
			}
			inside := p[strings.Index(p, "<section"):]
			out := map[string]any{"title": "Reviewed part " + m[1][:8], "summary": "The agent worked on the customer's request.",
				"objective": "settle the refund request", "score": nil, "reason": "the evidence does not show whether it worked"}
			if strings.Contains(inside, "refund is on its way") {
				out["score"], out["reason"] = 0.8, "the agent looked the order up, then confirmed the refund"
			}
			return llmtest.JSON(out)
		}
		tasks := len(webTaskRe.FindAllString(p, -1))
		objective := "the request"
		if i := strings.Index(p, `role="user">`); i >= 0 {
			rest := strings.TrimSpace(p[i+len(`role="user">`):])
			if j := strings.Index(rest, "</event>"); j >= 0 {
				objective = strings.TrimSpace(rest[:j])
			}
		}
		var assistant []string
		for _, m := range webEventRe.FindAllStringSubmatch(p, -1) {
			if m[2] == "assistant" {
				assistant = append(assistant, m[1])
			}
		}
		out := make([]any, tasks)
		for k := range out {
			cps := []any{}
			if tasks == 1 {
				for i, id := range assistant {
					v := 0.9
					if len(assistant) > 1 {
						v = 0.4 + 0.5*float64(i)/float64(len(assistant)-1)
					}
					cps = append(cps, map[string]any{"step_id": id, "completion": v, "reason": fmt.Sprintf("checkpoint %d of %d", i+1, len(assistant))})
				}
			}
			out[k] = map[string]any{"objective": objective, "checkpoints": cps}
		}
		return llmtest.JSON(map[string]any{"tasks": out})
	})
	return srv.URL
}

// heldOutTraces imports n rated refund conversations (alternately good and
// bad, rated as a whole and on the answer) for an account whose GEPA run
// has enough examples (gepa.MinHoldoutExamples) to hold a fifth out.
func heldOutTraces(t *testing.T, in *instance, key string, n int) []string {
	var lines []string
	for i := range n {
		answer := "Your order %d was delivered; I started the refund within policy."
		if i%2 == 1 {
			answer = "Sure! Refund issued for %d, no questions asked."
		}
		lines = append(lines, fmt.Sprintf(`{"id":"ho-%d","steps":[{"role":"system","content":"Refunds within 30 days."},`+
			`{"role":"user","content":"Refund order %d please"},{"role":"assistant","content":"%s"}]}`, i, 100+i, fmt.Sprintf(answer, 100+i)))
	}
	ids := in.importTraces(key, "stash", strings.Join(lines, "\n"))
	for i, id := range ids {
		d := in.getTrace(t, key, id)
		rating := 1
		if i%2 == 1 {
			rating = -1
		}
		for _, body := range []map[string]any{{"rating": rating}, {"step_id": d.Steps[2]["id"], "rating": rating}} {
			if r := in.do("POST", "/api/v1/rm/traces/"+id+"/annotations", key, body); r.Status != 200 {
				t.Fatalf("rating %s: %d %s", id, r.Status, r.Body)
			}
		}
	}
	return ids
}

// sectionedTrace is one request worked in two recognisable phases (looking
// the order up, then issuing the refund) and answered: a task with phase
// children, for the viewer's breadcrumbs.
func sectionedTrace() string {
	return `{"id":"refund-1183","title":"Refund in phases","steps":[` +
		`{"role":"user","content":"I want a refund for order 1183"},` +
		`{"role":"assistant","content":"","tool_name":"lookup_order","tool_input":{"order_id":"1183"},"tool_call_id":"c1"},` +
		`{"role":"tool","content":"{\"status\": \"delivered\", \"days\": 12}","tool_name":"lookup_order","tool_call_id":"c1"},` +
		`{"role":"assistant","content":"","tool_name":"create_refund","tool_input":{"order_id":"1183"},"tool_call_id":"c2"},` +
		`{"role":"tool","content":"{\"refund\": \"started\"}","tool_name":"create_refund","tool_call_id":"c2"},` +
		`{"role":"assistant","content":"Your refund is on its way."}]}`
}
