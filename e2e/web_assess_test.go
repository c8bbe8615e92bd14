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
	webTaskRe    = regexp.MustCompile(`<task index="\d+" first="([^"]+)" last="([^"]+)">`)
	webEventRe   = regexp.MustCompile(`<event step="([^"]+)" role="(\w+)">`)
)

// webAssessor starts the browser suite's fast model (CRITIC_FAST_MODEL),
// scripted so the viewer's section breadcrumbs and completion curve have
// something to show that a test can predict: a section is titled "Reviewed
// part <last 8 characters of its first step id>" (the random end of the
// id — its start is the import time, alike for every step of a trace — so a
// title shown in a breadcrumb proves it was bound to that exact range); it scores 0.8 when
// it holds the labeled trace's answer ("refund is on its way") and is
// Unscored, with the reason, otherwise. A single-request trace gets one
// checkpoint per assistant event in the evidence, from 0.4 rising evenly
// to 0.9, with the first user message as the objective; in a trace of
// several tasks each task's assistant events rise evenly from 0.2 to 0.8,
// with the task's own first user message as its objective. Titles are
// refused (the derived titles the other pages expect stay).
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
			out := map[string]any{"title": "Reviewed part " + m[1][len(m[1])-8:], "summary": "The agent worked on the customer's request.",
				"objective": "settle the refund request", "score": nil, "reason": "the evidence does not show whether it worked"}
			if strings.Contains(inside, "refund is on its way") {
				out["score"], out["reason"] = 0.8, "the agent looked the order up, then confirmed the refund"
			}
			return llmtest.JSON(out)
		}
		type event struct{ id, role, text string }
		var evs []event
		for _, m := range webEventRe.FindAllStringSubmatchIndex(p, -1) {
			text := p[m[1]:]
			if j := strings.Index(text, "</event>"); j >= 0 {
				text = text[:j]
			}
			evs = append(evs, event{p[m[2]:m[3]], p[m[4]:m[5]], strings.TrimSpace(text)})
		}
		pos := func(id string) int {
			for i, e := range evs {
				if e.id == id {
					return i
				}
			}
			return -1
		}
		tasks := webTaskRe.FindAllStringSubmatch(p, -1)
		out := make([]any, len(tasks))
		for k, task := range tasks {
			lo, hi := 0, len(evs)-1
			if len(tasks) > 1 {
				lo, hi = pos(task[1]), pos(task[2])
			}
			objective := "the request"
			var assistant []string
			for i := lo; i >= 0 && i <= hi; i++ {
				switch {
				case evs[i].role == "user" && objective == "the request":
					objective = evs[i].text
				case evs[i].role == "assistant":
					assistant = append(assistant, evs[i].id)
				}
			}
			from, to := 0.4, 0.9
			if len(tasks) > 1 {
				from, to = 0.2, 0.8
			}
			cps := []any{}
			for i, id := range assistant {
				v := to
				if len(assistant) > 1 {
					v = from + (to-from)*float64(i)/float64(len(assistant)-1)
				}
				cps = append(cps, map[string]any{"step_id": id, "completion": v, "reason": fmt.Sprintf("checkpoint %d of %d", i+1, len(assistant))})
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

// twoTaskTrace is two independent requests: a refund looked up and
// answered, then an account set up along a recorded plan (TodoWrite), so
// the second task has subtasks — for the section cards' nesting and the
// completion curve's break between tasks.
func twoTaskTrace() string {
	todo := func(id, first, second string) string {
		return `{"role":"assistant","content":"","tool_name":"TodoWrite","tool_call_id":"` + id + `","tool_input":{"todos":[` +
			`{"content":"Create the account","status":"` + first + `","activeForm":"Creating the account"},` +
			`{"content":"Send the welcome email","status":"` + second + `","activeForm":"Sending the welcome email"}]}},` +
			`{"role":"tool","content":"Todos updated","tool_name":"TodoWrite","tool_call_id":"` + id + `"},`
	}
	return `{"id":"two-tasks","title":"Two requests","steps":[` +
		`{"role":"user","content":"Refund order 2210 please"},` +
		`{"role":"assistant","content":"","tool_name":"lookup_order","tool_input":{"order_id":"2210"},"tool_call_id":"c1"},` +
		`{"role":"tool","content":"{\"status\": \"delivered\"}","tool_name":"lookup_order","tool_call_id":"c1"},` +
		`{"role":"assistant","content":"Your refund is on its way."},` +
		`{"role":"user","content":"Now set up my account and send the welcome email"},` +
		todo("c2", "in_progress", "pending") +
		`{"role":"assistant","content":"","tool_name":"create_account","tool_input":{"email":"a@example.com"},"tool_call_id":"c3"},` +
		`{"role":"tool","content":"{\"account\": \"created\"}","tool_name":"create_account","tool_call_id":"c3"},` +
		todo("c4", "completed", "in_progress") +
		`{"role":"assistant","content":"","tool_name":"send_email","tool_input":{"template":"welcome"},"tool_call_id":"c5"},` +
		`{"role":"tool","content":"{\"sent\": true}","tool_name":"send_email","tool_call_id":"c5"},` +
		`{"role":"assistant","content":"Your account is ready and the welcome email is sent."}]}`
}
