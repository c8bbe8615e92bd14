package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/jobs"
)

// TestModelsComparisonPage: two rollouts of one prompt, two reward models
// trained by a real worker, then each trace scored by each model through
// the worker service (a claim and report by hand, so the test decides which
// answer each model prefers: they disagree). The queue offers the two
// preferred actions; in the browser (web/e2e/comparisons-models.spec.ts)
// the reviewer picks one with the keyboard, and the verdict is a
// comparison.reviewed of source "models" naming both models.
func TestModelsComparisonPage(t *testing.T) {
	webDir := requireBrowser(t)

	in, kafkaPort := startServeForJobs(t)
	key := in.newUser("model-comparer", false)
	ids := in.importTraces(key, "stash", strings.Join([]string{
		`{"id":"asc","title":"Sorting, attempt 1","steps":[{"role":"user","content":"Sort 3, 1, 2 ascending"},{"role":"assistant","content":"Sorted: 1, 2, 3."}]}`,
		`{"id":"desc","title":"Sorting, attempt 2","steps":[{"role":"user","content":"Sort 3, 1, 2 ascending"},{"role":"assistant","content":"Sorted: 3, 2, 1."}]}`,
	}, "\n"))
	action := map[string]string{}
	for i, id := range ids {
		d := in.getTrace(t, key, id)
		action[id] = d.Steps[1]["id"].(string)
		rating := []int{1, -1}[i]
		for _, body := range []map[string]any{{"rating": rating}, {"step_id": action[id], "rating": rating}} {
			r := in.do("POST", "/api/v1/rm/traces/"+id+"/annotations", key, body)
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		}
	}
	base := tinyBase(t, in)
	worker := startWorkerWith(t, in, kafkaPort, "mw1")
	var models []string
	for _, name := range []string{"first", "second"} {
		r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": name, "trace_ids": ids, "base_model": base,
			"training_config": map[string]any{"annotation_source": "explicit"}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		models = append(models, r.JSON(t)["id"].(string))
	}
	for _, m := range models {
		require.Equal(t, "succeeded", in.waitModel(t, key, m, "succeeded", "failed")["status"], in.logText())
	}
	require.NoError(t, worker.Process.Kill())
	_, _ = worker.Process.Wait()

	// Rescore by hand: the first model prefers the ascending answer, the
	// second the descending one.
	prefers := map[string]string{models[0]: ids[0], models[1]: ids[1]}
	for _, m := range models {
		for _, id := range ids {
			r := in.do("POST", "/api/v1/rm/traces/"+id+"/score", key, map[string]any{"reward_model_id": m})
			require.Equal(t, http.StatusAccepted, r.Status, string(r.Body))
			run := r.JSON(t)["id"].(string)
			job := map[string]any{"worker_id": "by-hand", "job": map[string]any{"run_id": run, "trace_id": id, "model_id": m}}
			require.Eventually(t, func() bool {
				return in.do("POST", jobs.JobPath(jobs.KindScore, run, jobs.Claim), "e2e-worker-token", job).Status == http.StatusOK
			}, time.Minute, 100*time.Millisecond)
			score := -1.0
			if prefers[m] == id {
				score = 1
			}
			job["body"] = map[string]any{"action_scores": []map[string]any{{"trace_id": id, "step_id": action[id], "score": score, "credit": 0}}}
			r = in.do("POST", jobs.JobPath(jobs.KindScore, run, jobs.Finish), "e2e-worker-token", job)
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		}
	}
	require.Eventually(t, func() bool {
		q := in.do("GET", "/api/v1/rm/comparisons/queue", key, nil)
		items, _ := q.JSON(t)["items"].([]any)
		return len(items) == 1 && items[0].(map[string]any)["source"] == "models"
	}, time.Minute, 200*time.Millisecond)

	require.Equal(t, 1, runSpec(t, webDir, "models comparisons", "comparisons-models.spec.ts", in.url, key, "CRITIC_E2E_COMPARE_MODELS=1"))

	// The verdict in the log: both models, both sides, the ascending one won.
	got := in.openedPayloads(t, "comparison.reviewed.v1") // sealed on the trace's stream
	require.Len(t, got, 1)
	p := got[0]
	require.Equal(t, "models", p["source"])
	require.ElementsMatch(t, models, []any{p["model_id"], p["other_model_id"]})
	won := p[p["choice"].(string)].(map[string]any)
	require.Equal(t, "assistant: Sorted: 1, 2, 3.", won["action"])
	require.Equal(t, prefers[won["model_id"].(string)], won["trace_id"])
	require.JSONEq(t, `{"items":[]}`, string(in.do("GET", "/api/v1/rm/comparisons/queue", key, nil).Body))
}
