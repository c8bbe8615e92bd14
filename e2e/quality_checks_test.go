package e2e

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/grade/gradetest"
	"github.com/criticml/critic/gpuworker/label/labeltest"
	"github.com/criticml/critic/platform/llm/llmtest"
)

// TestQualityChecksByTheWorkerTier: with CRITIC_GRADING_MODEL naming a
// grading model on an OpenAI-compatible server and TYPESAFE_API_KEY as its
// key, `critic worker` labels an imported trace and then asks one quality
// check per open step (the tool call, the unreacted answer) with that key;
// GET /traces/{id} shows the blended numbers in steps[].metadata.reward
// and step_scores.
func TestQualityChecksByTheWorkerTier(t *testing.T) {
	srv := llmtest.New(t)
	var grades atomic.Int32
	var wrongKey atomic.Bool
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		if id, _ := gradetest.Target(r); id != "" {
			grades.Add(1)
			if r.Header.Get("Authorization") != "Bearer ts-key" || r.Model != "scripted-grader" {
				wrongKey.Store(true)
			}
			return gradetest.Reply(r)
		}
		return labeltest.Reply(r)
	})
	env := []string{"CRITIC_STEP_LABEL_MODEL=openai/scripted-labeler", "CRITIC_STEP_LABEL_API_BASE=" + srv.URL, "OPENAI_API_KEY=test-key",
		"CRITIC_GRADING_MODEL=openai/scripted-grader", "CRITIC_GRADING_API_BASE=" + srv.URL, "TYPESAFE_API_KEY=ts-key"}
	in, kafkaPort := startServeForJobs(t, env...)
	key := in.newUser("grading-owner", false)
	startWorkerWith(t, in, kafkaPort, "gw1", env...)

	ids := in.importTraces(key, "stash", `{"id":"inv-1","steps":[{"role":"user","content":"find invoice 7"},`+
		`{"role":"assistant","content":"","tool_name":"search","tool_input":{"q":"7"},"tool_call_id":"c1"},`+
		`{"role":"tool","content":"invoice 7: paid","tool_name":"search","tool_call_id":"c1"},`+
		`{"role":"assistant","content":"Invoice 7 is paid."}]}`)
	type view struct {
		Steps []struct {
			Metadata map[string]any `json:"metadata"`
		} `json:"steps"`
		StepScores *struct {
			Policy     string   `json:"policy"`
			TraceScore *float64 `json:"trace_score"`
			Outcome    string   `json:"outcome"`
		} `json:"step_scores"`
	}
	get := func() view {
		r := in.do("GET", "/api/v1/rm/traces/"+ids[0], key, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		var v view
		require.NoError(t, json.Unmarshal(r.Body, &v))
		return v
	}
	require.Eventually(t, func() bool {
		v := get()
		return v.StepScores != nil && v.StepScores.Policy == "step_scores_v1+quality_check_v1"
	}, time.Minute, 200*time.Millisecond, in.logText())
	v := get()
	require.Equal(t, int32(2), grades.Load(), "one check per open step")
	require.False(t, wrongKey.Load(), "the grading calls use TYPESAFE_API_KEY and the grading model")
	require.InDelta(t, 0.225, *v.StepScores.TraceScore, 1e-9)
	require.Equal(t, "partial_success", v.StepScores.Outcome)
	work := v.Steps[1].Metadata["reward"].(map[string]any)
	require.InDelta(t, -0.05, work["points"], 1e-9)
	require.Equal(t, "work_v1", work["quality_check"].(map[string]any)["question"])
	answer := v.Steps[3].Metadata["reward"].(map[string]any)
	require.InDelta(t, 0.275, answer["points"], 1e-9)
	require.Equal(t, "openai/scripted-grader", answer["quality_check"].(map[string]any)["model"])
}
