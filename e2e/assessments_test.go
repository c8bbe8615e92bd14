package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/llm/llmtest"
	"github.com/criticml/critic/platform/metrics/metricstest"
)

var assessEventRe = regexp.MustCompile(`<event step="([^"]+)" role="assistant">`)

// scriptedAssessor plays the fast model: titles, section assessments (a
// section whose evidence says "overconfident" gets an out-of-range score,
// which the API must refuse) and completion estimates with one checkpoint
// at the last assistant event.
func scriptedAssessor(r llmtest.Request) llmtest.Reply {
	switch {
	case r.SchemaName == "title":
		return llmtest.JSON(map[string]any{"title": "A title"})
	case r.SchemaName != "assessment":
		return llmtest.Status(400)
	case strings.HasPrefix(r.Messages[0].Content, "You assess one section"):
		score := 0.8
		if strings.Contains(r.Last(), "overconfident") {
			score = 1.5
		}
		return llmtest.JSON(map[string]any{"title": "Looks up the invoice", "summary": "The agent searched and answered.",
			"objective": "find invoice 7", "score": score, "reason": "the answer matches the search result"})
	default:
		m := assessEventRe.FindAllStringSubmatch(r.Last(), -1)
		return llmtest.JSON(map[string]any{"tasks": []any{map[string]any{"objective": "find invoice 7", "checkpoints": []any{
			map[string]any{"step_id": m[len(m)-1][1], "completion": 0.9, "reason": "answered"}}}}})
	}
}

// TestSectionSummariesAndCompletionFromTheWorkerTier: with a fast model the
// first request answers pending (the request handler only records what to
// generate), the worker's answer is cached and returned, an unchanged trace
// never asks the model again, and an answer outside 0–1 is refused and
// shown as unavailable with the reason.
func TestSectionSummariesAndCompletionFromTheWorkerTier(t *testing.T) {
	srv := llmtest.New(t)
	srv.Handle(scriptedAssessor)
	env := []string{"CRITIC_FAST_MODEL=openai/scripted-fast", "CRITIC_FAST_API_BASE=" + srv.URL, "OPENAI_API_KEY=test-key"}
	in, kafkaPort := startServeForJobs(t, env...)
	key := in.newUser("assessor", false)
	other := in.newUser("other", false)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startWorkerWith(t, in, kafkaPort, "aw1", append(env, "CRITIC_WORKER_METRICS_ADDR="+metricsAddr)...)
	ids := in.importTraces(key, "stash", strings.Join([]string{
		`{"id":"a-1","title":"Invoice","steps":[{"role":"user","content":"find invoice 7"},{"role":"assistant","content":"","tool_name":"search","tool_input":{"q":"7"},"tool_call_id":"c1"},{"role":"tool","content":"invoice 7: paid","tool_name":"search","tool_call_id":"c1"},{"role":"assistant","content":"Invoice 7 is paid."}]}`,
		`{"id":"a-2","title":"Bold","steps":[{"role":"user","content":"is it done?"},{"role":"assistant","content":"overconfident: yes, certainly."}]}`,
	}, "\n"))
	d := in.getTrace(t, key, ids[0])
	path := "/api/v1/rm/traces/" + ids[0] + "/section-summaries"
	rng := map[string]any{"ranges": []map[string]any{{"first_step_id": d.Steps[0]["id"], "last_step_id": d.Steps[3]["id"]}}}
	type summaries struct {
		Sections []struct {
			FirstStepID string   `json:"first_step_id"`
			LastStepID  string   `json:"last_step_id"`
			Title       *string  `json:"title"`
			Objective   *string  `json:"objective"`
			Score       *float64 `json:"score"`
			Reason      *string  `json:"reason"`
		} `json:"sections"`
		Pending     bool    `json:"pending"`
		Unavailable bool    `json:"unavailable"`
		Reason      *string `json:"unavailable_reason"`
	}
	post := func(key, path string, body any) (int, summaries) {
		r := in.do("POST", path, key, body)
		var s summaries
		if r.Status == http.StatusOK {
			require.NoError(t, json.Unmarshal(r.Body, &s))
		}
		return r.Status, s
	}
	st, _ := post(other, path, rng)
	require.Equal(t, http.StatusNotFound, st, "another owner's trace, before any cache read")
	st, s := post(key, path, rng)
	require.Equal(t, http.StatusOK, st)
	require.True(t, s.Pending)
	require.False(t, s.Unavailable)
	require.Nil(t, s.Sections[0].Title, "nothing is made up while pending")
	require.Eventually(t, func() bool { _, s = post(key, path, rng); return !s.Pending }, time.Minute, 200*time.Millisecond)
	require.Len(t, s.Sections, 1)
	require.Equal(t, d.Steps[0]["id"], s.Sections[0].FirstStepID)
	require.Equal(t, "Looks up the invoice", *s.Sections[0].Title)
	require.InDelta(t, 0.8, *s.Sections[0].Score, 1e-9)
	calls := srv.Calls()
	for range 3 {
		_, s = post(key, path, rng)
		require.False(t, s.Pending)
	}
	require.Equal(t, calls, srv.Calls(), "an unchanged trace never triggers generation again")
	var requests int
	require.NoError(t, in.pool.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE stream = $1 AND type = 'trace.assessment_requested.v1'`,
		"trace/"+ids[0]).Scan(&requests))
	require.Equal(t, 1, requests, "polls while the lease ran asked once")

	// Completion.
	cpath := "/api/v1/rm/traces/" + ids[0] + "/completion"
	var c struct {
		Tasks []struct {
			FirstStepID string  `json:"first_step_id"`
			Objective   *string `json:"objective"`
			Checkpoints []struct {
				StepID     string   `json:"step_id"`
				Completion *float64 `json:"completion"`
			} `json:"checkpoints"`
		} `json:"tasks"`
		Pending bool `json:"pending"`
	}
	r := in.do("POST", cpath, key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.NoError(t, json.Unmarshal(r.Body, &c))
	require.True(t, c.Pending)
	require.Eventually(t, func() bool {
		r := in.do("POST", cpath, key, nil)
		return json.Unmarshal(r.Body, &c) == nil && !c.Pending
	}, time.Minute, 200*time.Millisecond)
	require.Len(t, c.Tasks, 1)
	require.Equal(t, "find invoice 7", *c.Tasks[0].Objective)
	require.Len(t, c.Tasks[0].Checkpoints, 1)
	require.Equal(t, d.Steps[3]["id"], c.Tasks[0].Checkpoints[0].StepID)
	require.InDelta(t, 0.9, *c.Tasks[0].Checkpoints[0].Completion, 1e-9)

	// Changed evidence (a re-import with a different answer) is a new key:
	// generated again, once.
	in.importTraces(key, "stash", `{"id":"a-1","title":"Invoice","steps":[{"role":"user","content":"find invoice 7"},{"role":"assistant","content":"","tool_name":"search","tool_input":{"q":"7"},"tool_call_id":"c1"},{"role":"tool","content":"invoice 7: paid","tool_name":"search","tool_call_id":"c1"},{"role":"assistant","content":"Invoice 7 was paid on May 2."}]}`)
	d = in.getTrace(t, key, ids[0])
	rng = map[string]any{"ranges": []map[string]any{{"first_step_id": d.Steps[0]["id"], "last_step_id": d.Steps[3]["id"]}}}
	calls = srv.Calls()
	_, s = post(key, path, rng)
	require.True(t, s.Pending, "the evidence changed: the cached summary is not reused")
	require.Eventually(t, func() bool { _, s = post(key, path, rng); return !s.Pending }, time.Minute, 200*time.Millisecond)
	require.Equal(t, calls+1, srv.Calls())

	// An out-of-range score is refused by the API: unavailable, with why.
	d2 := in.getTrace(t, key, ids[1])
	path2 := "/api/v1/rm/traces/" + ids[1] + "/section-summaries"
	rng2 := map[string]any{"ranges": []map[string]any{{"first_step_id": d2.Steps[0]["id"], "last_step_id": d2.Steps[1]["id"]}}}
	require.Eventually(t, func() bool { _, s = post(key, path2, rng2); return s.Unavailable }, time.Minute, 200*time.Millisecond)
	require.False(t, s.Pending)
	require.Contains(t, *s.Reason, "outside 0–1")
	require.Nil(t, s.Sections[0].Score)

	// The worker's /metrics counted every request the provider answered,
	// under the fast role, with the tokens it reported (10 in, 5 out each).
	fast := []string{"provider=openai", "role=fast"}
	var m metricstest.Families
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		m = metricstest.Scrape(t, "http://"+metricsAddr+"/metrics")
		total := m.Value("critic_llm_requests_total", append(fast, "outcome=ok")...) + m.Value("critic_llm_requests_total", append(fast, "outcome=error")...)
		if total == float64(srv.Calls()) || time.Now().After(deadline) {
			break
		}
	}
	ok := m.Value("critic_llm_requests_total", append(fast, "outcome=ok")...)
	require.Equal(t, float64(srv.Calls()), ok, "every provider answer here is valid JSON: all ok")
	require.Zero(t, m.Value("critic_llm_requests_total", append(fast, "outcome=error")...))
	require.GreaterOrEqual(t, ok, 4.0, "two sections, a completion and a regenerated section")
	require.Equal(t, ok, m.Value("critic_llm_request_duration_seconds", fast...))
	require.Equal(t, 10*ok, m.Value("critic_llm_tokens_total", append(fast, "direction=prompt")...))
	require.Equal(t, 5*ok, m.Value("critic_llm_tokens_total", append(fast, "direction=completion")...))
}
