package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/evaluator"
)

// TestVerifiedOutcomesCountAsReviewed: rollouts of one prompt imported with
// consent, two with an explicit verified outcome (metadata.outcome) and one
// whose imported step labels say the user rejected its answer, pair
// succeeded over failed where they first differ. A personal model's dataset
// holds those pairs (the audit names them verified outcomes and where each
// outcome was read), and the operator's benchmark freezes them.
func TestVerifiedOutcomesCountAsReviewed(t *testing.T) {
	in, _ := startServeForJobs(t)
	key := in.newUser("verifier", false)
	owner := in.do("GET", "/api/v1/rm/me", key, nil).JSON(t)["user_id"].(string)
	group := ""
	for i := 0; group == ""; i++ {
		if g := fmt.Sprintf("rollouts-%d", i); evaluator.InBenchmark(owner + "/" + g) {
			group = g
		}
	}
	rollout := func(id, answer, outcome, reaction string) string {
		meta := `{"group":"` + group + `"`
		if outcome != "" {
			meta += `,"outcome":"` + outcome + `"`
		}
		meta += `}`
		steps := `{"role":"user","content":"Sort 3, 1, 2 ascending"},{"role":"assistant","content":"` + answer + `"}`
		if reaction != "" {
			steps = `{"role":"user","content":"Sort 3, 1, 2 ascending","metadata":{"label":{"chunk_id":"c1","task_id":"t1","actor":"user","intent":"request","verdict":"none","verdict_target":null,"sentiment":"neutral","evidence":"","note":""}}},` +
				`{"role":"assistant","content":"` + answer + `","metadata":{"label":{"chunk_id":"c2","task_id":"t1","actor":"agent","type":"answer","effect":"none","result":"none","duplicate_of":null,"is_output":true,"outcome":"solved","stance":"confident","coverage":"full","evidence":"","note":""}}},` +
				`{"role":"user","content":"` + reaction + `","metadata":{"label":{"chunk_id":"c3","task_id":"t1","actor":"user","intent":"feedback","verdict":"rejected","verdict_target":"c2","sentiment":"negative","evidence":"wrong","note":""}}}`
		}
		return `{"id":"` + id + `","title":"` + id + `","metadata":` + meta + `,"steps":[` + steps + `]}`
	}
	r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": "stash", "contribute": true, "data": strings.Join([]string{
		rollout("good", "1, 2, 3", "success", ""),
		rollout("bad", "3, 2, 1", "failure", ""),
		rollout("rejected", "2, 1, 3", "", "No, that's wrong."),
		rollout("unknown", "3, 1, 2", "", ""), // no verified outcome: pairs with nothing
	}, "\n")})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var ids []string
	for _, id := range r.JSON(t)["trace_ids"].([]any) {
		ids = append(ids, id.(string))
	}
	// The labels' outcome shows on the trace too.
	require.Equal(t, "failure", in.do("GET", "/api/v1/rm/traces/"+ids[2], key, nil).JSON(t)["step_scores"].(map[string]any)["outcome"])

	// A personal model on the rollouts: no rating, no comment, yet two
	// pairs (good over bad, good over rejected).
	r = in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "rollouts", "trace_ids": ids, "base_model": filepath.Join(t.TempDir(), "no-base")})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	model := r.JSON(t)["id"].(string)
	require.Eventually(t, func() bool {
		var n int
		_ = in.pool.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE stream = 'reward_model/' || $1 AND type = 'reward_model.dataset_built.v1'`, model).Scan(&n)
		return n > 0
	}, time.Minute, 200*time.Millisecond, in.logText())
	out, err := in.cli("audit", "model", model)
	require.NoError(t, err, out)
	require.Equal(t, 2, strings.Count(out, "from verified_outcome"), out)
	require.Contains(t, out, fmt.Sprintf("trace %s succeeded (metadata.outcome), trace %s failed (metadata.outcome)", ids[0], ids[1]))
	require.Contains(t, out, fmt.Sprintf("trace %s succeeded (metadata.outcome), trace %s failed (step_labels)", ids[0], ids[2]))
	require.Contains(t, out, "OK: the stored dataset equals the one rebuilt from the log")

	// The shared evaluator's benchmark: the rollouts' group is a benchmark
	// group, so both comparisons are benchmark items; verify rebuilds them.
	out, err = in.cli("evaluator", "benchmark", "freeze")
	require.NoError(t, err, out)
	require.Contains(t, out, "benchmark version 1 frozen at log seq")
	require.Contains(t, out, ": 2 items")
	require.Contains(t, out, "from verified outcomes\t2")
	out, err = in.cli("evaluator", "benchmark", "verify")
	require.NoError(t, err, out)
	require.Contains(t, out, "1 benchmark version(s) rebuild from the log exactly as frozen")

	// Opting the failed rollout out takes its comparison out of the next
	// version; the first stays as frozen.
	r = in.do("PUT", "/api/v1/rm/traces/"+ids[1]+"/contribution", key, map[string]any{"contribute": false})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	out, err = in.cli("evaluator", "benchmark", "freeze")
	require.NoError(t, err, out)
	require.Contains(t, out, "benchmark version 2 frozen at log seq")
	require.Contains(t, out, ": 1 items")
	out, err = in.cli("evaluator", "benchmark", "verify")
	require.NoError(t, err, out)
	require.Contains(t, out, "2 benchmark version(s) rebuild from the log exactly as frozen")
}
