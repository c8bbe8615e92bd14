package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/platform/llm/llmtest"
)

// TestComparisonPage: the feedback model's alternatives, recorded by a real
// worker, are compared in the browser with the keyboard (web/e2e/
// comparisons.spec.ts): A / B pick a side, E a tie with a comment, and each
// verdict is a comparison.reviewed event naming the side the reviewer saw
// and the finding it came from.
func TestComparisonPage(t *testing.T) {
	webDir := requireBrowser(t)

	srv := llmtest.New(t)
	srv.Handle(scriptedClassifier)
	llmEnv := []string{"CRITIC_FEEDBACK_MODEL=openai/scripted-classifier", "CRITIC_FEEDBACK_API_BASE=" + srv.URL, "OPENAI_API_KEY=test-key",
		"CRITIC_FAST_MODEL=openai/scripted-fast", "CRITIC_FAST_API_BASE=" + srv.URL}
	in, kafkaPort := startServeForJobs(t, llmEnv...)
	key := in.newUser("comparer", false)
	startWorkerWith(t, in, kafkaPort, "cw1", llmEnv...)
	ids := in.importTraces(key, "stash", strings.Join([]string{
		`{"id":"sort-1","title":"Sorting numbers","steps":[{"role":"user","content":"Sort 3, 1, 2 ascending"},{"role":"assistant","content":"Sorted: 3, 2, 1."},{"role":"user","content":"No, that's the wrong order."}]}`,
		`{"id":"sort-2","title":"Sorting letters","steps":[{"role":"user","content":"Sort a, c, b"},{"role":"assistant","content":"Sorted: a, b, c."},{"role":"user","content":"Thanks, perfect."}]}`,
	}, "\n"))
	// Extraction records the findings; training then fails on the missing
	// base model, which the comparisons do not need.
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "feedback", "trace_ids": ids, "base_model": filepath.Join(t.TempDir(), "no-base"),
		"training_config": map[string]any{"annotation_source": "feedback", "input_version": 1}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	in.waitModel(t, key, r.JSON(t)["id"].(string), "succeeded", "failed")
	q := in.do("GET", "/api/v1/rm/comparisons/queue", key, nil)
	require.Equal(t, http.StatusOK, q.Status, string(q.Body))
	require.Len(t, q.JSON(t)["items"], 2, string(q.Body))

	require.Equal(t, 1, runSpec(t, webDir, "comparisons", "comparisons.spec.ts", in.url, key, "CRITIC_E2E_COMPARE=1"))

	// What the browser did is in the log, with the presentation it showed.
	// (Opened with the trace's key: comparisons live on the trace's
	// sealed stream.)
	got := in.openedPayloads(t, "comparison.reviewed.v1")
	require.Len(t, got, 2)
	byTrace := map[string]map[string]any{}
	for _, p := range got {
		byTrace[p["trace_id"].(string)] = p
		require.NotEmpty(t, p["finding_id"])
	}
	first, second := byTrace[ids[0]], byTrace[ids[1]]
	require.Equal(t, "alternative", first["preferred"], "the reviewer picked the side showing the ascending sort")
	require.Contains(t, first[first["choice"].(string)].(map[string]any)["action"], "Sorted ascending: 1, 2, 3.")
	require.Equal(t, "tie", second["choice"])
	require.Equal(t, "both fine", second["comment"])
	q = in.do("GET", "/api/v1/rm/comparisons/queue", key, nil)
	require.JSONEq(t, `{"items":[]}`, string(q.Body))
	// The reviewer opted the numbers trace in from the page, only that one.
	require.Equal(t, true, in.do("GET", "/api/v1/rm/traces/"+ids[0], key, nil).JSON(t)["contribute"])
	require.Equal(t, false, in.do("GET", "/api/v1/rm/traces/"+ids[1], key, nil).JSON(t)["contribute"])

	// A personal model trained after the verdicts learns from the decided
	// comparison (the tie makes no pair), and the audit shows who decided it.
	r = in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "after-review", "trace_ids": ids, "base_model": filepath.Join(t.TempDir(), "no-base"),
		"training_config": map[string]any{"annotation_source": "feedback", "input_version": 1}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	after := r.JSON(t)["id"].(string)
	in.waitModel(t, key, after, "succeeded", "failed")
	out, err := in.cli("audit", "model", after)
	require.NoError(t, err, out)
	require.Contains(t, out, "from reviewed_comparison")
	require.Contains(t, out, "by reviewer "+in.do("GET", "/api/v1/rm/me", key, nil).JSON(t)["user_id"].(string))
	require.Contains(t, out, "OK: the stored dataset equals the one rebuilt from the log")

	// Opt both traces in; the operator freezes a benchmark from them. Which
	// traces are benchmark traces is a fixed hash of their group, and a tie
	// is no item, so the expected outcome follows from the ids.
	me := in.do("GET", "/api/v1/rm/me", key, nil).JSON(t)
	inBench := 0
	for _, id := range ids {
		r := in.do("PUT", "/api/v1/rm/traces/"+id+"/contribution", key, map[string]any{"contribute": true})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		if evaluator.InBenchmark(me["user_id"].(string) + "/" + id) {
			inBench++
		}
	}
	out, err = in.cli("evaluator", "benchmark", "freeze")
	items := inBench - countTies(got, me["user_id"].(string))
	if items == 0 {
		require.Error(t, err, out)
		require.Contains(t, out, "no reviewed comparison of a contributing trace")
	} else {
		require.NoError(t, err, out)
		require.Contains(t, out, "benchmark version 1 frozen at log seq")
		require.Contains(t, out, fmt.Sprintf(": %d items", items))
		out, err = in.cli("evaluator", "benchmark", "verify")
		require.NoError(t, err, out)
		require.Contains(t, out, "1 benchmark version(s) rebuild from the log exactly as frozen")
	}
	// A candidate needs a benchmark and two training pairs outside it.
	out, err = in.cli("evaluator", "train")
	switch {
	case items == 0:
		require.Error(t, err)
		require.Contains(t, out, "no benchmark is frozen yet")
	case err != nil:
		require.Contains(t, out, "a candidate needs at least 2")
	default:
		require.Contains(t, out, "queued for the worker tier")
	}

	// The read model rebuilt from the log is the live one, comparisons,
	// consent and benchmarks included.
	require.Len(t, dumpEvaluatorTables(t, in)[0], 2, "two comparisons")
	requireReplayMatches(t, in, func() any { return dumpEvaluatorTables(t, in) })
}

// dumpEvaluatorTables renders rm_comparisons and rm_evaluator_benchmarks.
func dumpEvaluatorTables(t *testing.T, in *instance) [][]string {
	var out [][]string
	for _, q := range []string{"SELECT row_to_json(x)::text FROM (SELECT * FROM rm_comparisons ORDER BY id) x",
		"SELECT row_to_json(x)::text FROM (SELECT * FROM rm_evaluator_benchmarks ORDER BY version) x"} {
		rows, err := in.pool.Query(context.Background(), q)
		require.NoError(t, err)
		lines := []string{}
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			lines = append(lines, s)
		}
		rows.Close()
		out = append(out, lines)
	}
	return out
}

// countTies counts the reviewed ties among benchmark-group traces: a tie is
// recorded but is no benchmark item.
func countTies(reviewed []map[string]any, owner string) int {
	n := 0
	for _, p := range reviewed {
		if p["choice"] == "tie" && evaluator.InBenchmark(owner+"/"+p["trace_id"].(string)) {
			n++
		}
	}
	return n
}
