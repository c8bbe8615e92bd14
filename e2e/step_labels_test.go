package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// labeledTrace is an offline-labeled refund conversation in Stash Trace
// Format: a request, a lookup, an answer, and (when confirmed) the user's
// confirmation of that answer.
func labeledTrace(confirmed bool) string {
	steps := []map[string]any{
		{"role": "system", "content": "You are a support agent."},
		{"role": "user", "content": "I want a refund for order 1182", "metadata": map[string]any{"label": map[string]any{
			"chunk_id": "c1", "task_id": "refund", "actor": "user", "intent": "request", "verdict": "none", "verdict_target": nil,
			"sentiment": "neutral", "evidence": "refund for order 1182", "note": ""}}},
		{"role": "assistant", "content": "", "tool_name": "lookup_order", "tool_input": map[string]any{"order_id": "1182"}, "tool_call_id": "call_1",
			"metadata": map[string]any{"label": map[string]any{
				"chunk_id": "c2", "task_id": "refund", "actor": "agent", "type": "tool_call", "effect": "lookup", "result": "ok",
				"duplicate_of": nil, "is_output": false, "outcome": "none", "stance": "none", "coverage": "none", "evidence": "", "note": ""}}},
		{"role": "tool", "content": `{"status": "delivered"}`, "tool_name": "lookup_order", "tool_call_id": "call_1"},
		{"role": "assistant", "content": "Your refund is on its way.", "metadata": map[string]any{"label": map[string]any{
			"chunk_id": "c3", "task_id": "refund", "actor": "agent", "type": "answer", "effect": "none", "result": "none",
			"duplicate_of": nil, "is_output": true, "outcome": "solved", "stance": "confident", "coverage": "full",
			"evidence": "refund is on its way", "note": ""}}},
	}
	if confirmed {
		steps = append(steps, map[string]any{"role": "user", "content": "Got it, thanks!", "metadata": map[string]any{"label": map[string]any{
			"chunk_id": "c4", "task_id": "refund", "actor": "user", "intent": "feedback", "verdict": "confirmed", "verdict_target": "c3",
			"sentiment": "positive", "evidence": "Got it", "note": ""}}})
	}
	b, _ := json.Marshal(map[string]any{"id": "refund-1182", "title": "Refund", "steps": steps})
	return string(b)
}

type labeledDetail struct {
	Steps []struct {
		ID       string         `json:"id"`
		Metadata map[string]any `json:"metadata"`
	} `json:"steps"`
	StepScores *struct {
		Policy     string   `json:"policy"`
		Source     string   `json:"source"`
		TraceScore *float64 `json:"trace_score"`
		Outcome    string   `json:"outcome"`
		Tasks      []struct {
			TaskID       string   `json:"task_id"`
			FirstStepID  string   `json:"first_step_id"`
			LastStepID   string   `json:"last_step_id"`
			AnswerStepID *string  `json:"answer_step_id"`
			AnswerPoints *float64 `json:"answer_points"`
			Work         float64  `json:"work"`
			Score        float64  `json:"score"`
		} `json:"tasks"`
		Problems []any `json:"problems"`
	} `json:"step_scores"`
	Labeling struct {
		State   string  `json:"state"`
		Chunks  int     `json:"chunks"`
		Labeled int     `json:"labeled"`
		Reason  *string `json:"reason"`
	} `json:"labeling"`
	Sections []struct {
		Kind        string  `json:"kind"`
		Title       string  `json:"title"`
		TaskID      *string `json:"task_id"`
		FirstStepID string  `json:"first_step_id"`
		LastStepID  string  `json:"last_step_id"`
		Graded      bool    `json:"graded"`
	} `json:"sections"`
}

func (in *instance) labeledDetail(t *testing.T, key, id string) labeledDetail {
	t.Helper()
	r := in.do("GET", "/api/v1/rm/traces/"+id, key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var d labeledDetail
	require.NoError(t, json.Unmarshal(r.Body, &d))
	return d
}

// TestImportedLabelsScoreWithoutAModel: a trace labeled offline is scored
// by the fixed rules on GET /traces/{id} (breakdowns, task scores, outcome,
// sections) and in SQL (step_labels, task_scores); a re-import that adds the
// user's confirmation rescores it; the model-made assessments say they are
// unavailable and name the variable to set.
func TestImportedLabelsScoreWithoutAModel(t *testing.T) {
	in := startServe(t)
	alice := in.newUser("alice", false)
	bob := in.newUser("bob", false)
	id := in.importTraces(alice, "stash", labeledTrace(false))[0]

	d := in.labeledDetail(t, alice, id)
	require.NotNil(t, d.StepScores)
	require.Equal(t, "labels", d.StepScores.Source)
	require.Equal(t, "step_scores_v1", d.StepScores.Policy)
	require.Equal(t, "partial_success", d.StepScores.Outcome, "nobody reacted to the answer")
	require.Equal(t, "imported", d.Labeling.State)
	require.Equal(t, 3, d.Labeling.Labeled)
	require.InDelta(t, 0.22, *d.StepScores.TraceScore, 1e-9)
	require.Len(t, d.StepScores.Tasks, 1)
	task := d.StepScores.Tasks[0]
	require.Equal(t, "refund", task.TaskID)
	require.Equal(t, d.Steps[1].ID, task.FirstStepID)
	require.Equal(t, d.Steps[4].ID, *task.AnswerStepID)
	require.InDelta(t, -0.03, task.Work, 1e-9)
	reward := d.Steps[2].Metadata["reward"].(map[string]any)
	require.Equal(t, "work", reward["kind"])
	require.InDelta(t, -0.03, reward["score"].(float64), 1e-9)
	require.NotNil(t, d.Steps[2].Metadata["label"], "the imported label is kept as it is")
	require.Nil(t, d.Steps[1].Metadata["reward"], "user steps have no reward")
	require.Len(t, d.Sections, 1)
	require.Equal(t, "refund", *d.Sections[0].TaskID)
	require.Equal(t, "I want a refund for order 1182", d.Sections[0].Title)
	require.True(t, d.Sections[0].Graded)

	// Re-import with the user's confirmation: the answer earns +1 and passes
	// 0.3 × 1 × 0.8 back to the lookup.
	require.Equal(t, []string{id}, in.importTraces(alice, "stash", labeledTrace(true)))
	d = in.labeledDetail(t, alice, id)
	require.Equal(t, "success", d.StepScores.Outcome)
	require.InDelta(t, 0.97, *d.StepScores.TraceScore, 1e-9)
	require.InDelta(t, 0.21, d.Steps[2].Metadata["reward"].(map[string]any)["score"].(float64), 1e-9)
	answer := d.Steps[4].Metadata["reward"].(map[string]any)
	require.Equal(t, 1.0, answer["score"])
	require.Equal(t, "c4", answer["reacted_by"])

	// SQL sees the same labels and numbers.
	in.awaitQuery(t, alice, `SELECT chunk_id, actor, verdict, verdict_target, type, score, credit FROM step_labels ORDER BY step_index`, [][]any{
		{"c1", "user", "none", nil, nil, nil, nil},
		{"c2", "agent", nil, nil, "tool_call", 0.21, 0},
		{"c3", "agent", nil, nil, "answer", 1, 2},
		{"c4", "user", "confirmed", "c3", nil, nil, nil},
	})
	in.awaitQuery(t, alice, `SELECT task_id, answer_points, work, score, trace_score, trace_outcome FROM task_scores`, [][]any{
		{"refund", 1, -0.03, 0.97, 0.97, "success"},
	})
	require.Empty(t, in.query(t, bob, `SELECT * FROM step_labels`).Rows, "another owner sees none of it")

	// Section summaries: owner check, range checks, then unavailable.
	path := "/api/v1/rm/traces/" + id + "/section-summaries"
	rng := map[string]any{"ranges": []map[string]any{{"first_step_id": d.Steps[0].ID, "last_step_id": d.Steps[5].ID}}}
	r := in.do("POST", path, bob, rng)
	require.Equal(t, http.StatusNotFound, r.Status, string(r.Body))
	r = in.do("POST", path, alice, map[string]any{"ranges": []map[string]any{}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Body))
	r = in.do("POST", path, alice, map[string]any{"ranges": []map[string]any{{"first_step_id": d.Steps[3].ID, "last_step_id": d.Steps[1].ID}}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Body))
	r = in.do("POST", path, alice, map[string]any{"ranges": []map[string]any{{"first_step_id": "00000000-0000-0000-0000-000000000000", "last_step_id": d.Steps[1].ID}}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), "not a step of this trace")
	r = in.do("POST", path, alice, map[string]any{"ranges": []any{}, "extra": 1})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status)
	r = in.do("POST", path, alice, rng)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var ss struct {
		Sections []map[string]any `json:"sections"`
		Pending  bool             `json:"pending"`
		Unavail  bool             `json:"unavailable"`
		Reason   string           `json:"unavailable_reason"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &ss))
	require.True(t, ss.Unavail)
	require.False(t, ss.Pending)
	require.Contains(t, ss.Reason, "CRITIC_FAST_MODEL")
	require.Len(t, ss.Sections, 1)
	require.Equal(t, d.Steps[0].ID, ss.Sections[0]["first_step_id"])
	for _, k := range []string{"title", "summary", "objective", "score"} {
		v, ok := ss.Sections[0][k]
		require.True(t, ok, k)
		require.Nil(t, v, "%s is not made up", k)
	}

	// Completion: same checks, the requests listed without estimates.
	cpath := "/api/v1/rm/traces/" + id + "/completion"
	require.Equal(t, http.StatusNotFound, in.do("POST", cpath, bob, nil).Status)
	require.Equal(t, http.StatusNotFound, in.do("POST", "/api/v1/rm/traces/not-a-uuid/completion", alice, nil).Status)
	require.Equal(t, http.StatusUnprocessableEntity, in.do("POST", cpath, alice, `{"x":1}`).Status)
	r = in.do("POST", cpath, alice, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var c struct {
		Tasks []struct {
			FirstStepID string  `json:"first_step_id"`
			LastStepID  string  `json:"last_step_id"`
			Objective   *string `json:"objective"`
			Checkpoints []any   `json:"checkpoints"`
		} `json:"tasks"`
		Pending bool   `json:"pending"`
		Unavail bool   `json:"unavailable"`
		Reason  string `json:"unavailable_reason"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &c))
	require.True(t, c.Unavail)
	require.True(t, strings.Contains(c.Reason, "CRITIC_FAST_MODEL"))
	require.Len(t, c.Tasks, 1)
	require.Equal(t, d.Steps[0].ID, c.Tasks[0].FirstStepID)
	require.Equal(t, d.Steps[5].ID, c.Tasks[0].LastStepID)
	require.Nil(t, c.Tasks[0].Objective)
	require.Empty(t, c.Tasks[0].Checkpoints)

	// An unlabeled trace has sections but no step scores.
	plain := in.importTraces(alice, "openai_chat", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`)[0]
	pd := in.labeledDetail(t, alice, plain)
	require.Nil(t, pd.StepScores)
	require.Len(t, pd.Sections, 1)
	require.Equal(t, "unlabeled", pd.Labeling.State)
	require.Contains(t, *pd.Labeling.Reason, "CRITIC_STEP_LABEL_MODEL", "a missing score says where labels come from")
}
