package e2e

import (
	"context"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReplayEqualsTheLiveReadModel produces a log through the API that
// holds every kind of event the API can produce today — accounts, keys, the
// reward-model switch, imports, re-imports, deletions, source names, OTLP
// spans, session sync, annotations added, edited and removed (by hand and by
// a re-import), reward models queued, running, succeeded, failed and
// retried, heartbeats, trace
// and action scores, scoring runs — then rebuilds the read model from the
// log and requires every read-model table to be identical, row for row.
func TestReplayEqualsTheLiveReadModel(t *testing.T) {
	in, kafkaPort := startServeForJobs(t, "CRITIC_WORKER_LEASE=60s")
	key := in.newUser("replayer", false)
	out, err := in.cli("users", "issue-key", "--name", "replayer", "--read-only-key")
	require.NoError(t, err, out)
	for _, c := range []string{"disable-reward-models", "enable-reward-models"} {
		out, err := in.cli("users", c, "replayer")
		require.NoError(t, err, out)
	}

	// Models: trained (scores, action scores), then a scoring run.
	ids := ratedTraces(t, in, key)
	base := tinyBase(t, in)
	worker := startWorker(t, in, kafkaPort, "w1")
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "good", "trace_ids": ids, "base_model": base, "epochs": 1})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	good := r.JSON(t)["id"].(string)
	require.Equal(t, "succeeded", in.waitModel(t, key, good, "succeeded", "failed")["status"], in.logText())
	sr := in.do("POST", "/api/v1/rm/traces/"+ids[0]+"/score", key, map[string]any{"reward_model_id": good})
	require.Equal(t, http.StatusAccepted, sr.Status, string(sr.Body))
	runID := sr.JSON(t)["id"].(string)
	require.Eventually(t, func() bool {
		var status string
		_ = in.pool.QueryRow(context.Background(), "SELECT status FROM rm_scoring_runs WHERE id = $1", runID).Scan(&status)
		return status == "succeeded"
	}, time.Minute, 100*time.Millisecond)
	// Failed (too few pairs), retried, failed again.
	r = in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "few", "trace_ids": ids[1:2], "base_model": base})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	few := r.JSON(t)["id"].(string)
	in.waitModel(t, key, few, "failed")
	require.Equal(t, http.StatusAccepted, in.do("POST", "/api/v1/rm/reward-models/"+few+"/retry", key, nil).Status)
	in.waitModel(t, key, few, "failed")
	// Running: the worker dies mid-training; the lease (a minute here)
	// has not run out when the replay runs.
	running := longTraining(t, in, key, ids, sizedBase(t, in, "64", "2"))
	in.waitRunningWithProgress(t, key, running)
	require.NoError(t, worker.Process.Kill())
	_, _ = worker.Process.Wait()
	// Queued: no worker left to claim it.
	r = in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "waiting", "trace_ids": ids, "base_model": base})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	queued := r.JSON(t)["id"].(string)
	require.Eventually(t, func() bool {
		var n int
		_ = in.pool.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE stream = 'reward_model/' || $1 AND type = 'reward_model.dataset_built.v1'`, queued).Scan(&n)
		return n == 1
	}, time.Minute, 100*time.Millisecond)

	// Traces: re-import (replaces steps, drops scores and step annotations),
	// deletion, a source name, annotations edited and removed.
	in.importTraces(key, "stash", `{"id":"rm-1","steps":[{"role":"user","content":"Refund order 1"},{"role":"assistant","content":"No."}]}`)
	gone := in.importTraces(key, "stash", `{"id":"to-delete","steps":[{"role":"user","content":"bye"}]}`)[0]
	require.Equal(t, http.StatusOK, in.do("POST", "/api/v1/rm/traces/"+gone+"/annotations", key, map[string]any{"rating": 1}).Status)
	require.Equal(t, http.StatusNoContent, in.do("DELETE", "/api/v1/rm/traces/"+gone, key, nil).Status)
	require.Equal(t, http.StatusOK, in.do("PUT", "/api/v1/rm/trace-sources", key, map[string]any{"source_id": "stash", "name": "Stash imports"}).Status)
	d := in.getTrace(t, key, ids[2])
	ann := in.do("POST", "/api/v1/rm/traces/"+ids[2]+"/annotations", key, map[string]any{"step_id": d.Steps[1]["id"], "rating": -1, "comment": "rude"}).JSON(t)["id"].(string)
	require.Equal(t, http.StatusOK, in.do("PATCH", "/api/v1/rm/annotations/"+ann, key, map[string]any{"label_error": true, "label_error_note": "fine"}).Status)
	ann2 := in.do("POST", "/api/v1/rm/traces/"+ids[2]+"/annotations", key, map[string]any{"comment": "to remove"}).JSON(t)["id"].(string)
	require.Equal(t, http.StatusNoContent, in.do("DELETE", "/api/v1/rm/annotations/"+ann2, key, nil).Status)

	// OTLP spans: a first call, then a grown conversation (appended).
	const traceHex = "5bf92f3577b34da6a3ce929d0e0e4737"
	q := `[{"role":"user","parts":[{"type":"text","content":"Hi"}]}]`
	for i, body := range [][]byte{
		otlpJSON(traceHex, "00000000000000b1", q, `[{"role":"assistant","parts":[{"type":"text","content":"Hello."}]}]`),
		otlpJSON(traceHex, "00000000000000b2", `[{"role":"user","parts":[{"type":"text","content":"Hi"}]},{"role":"assistant","parts":[{"type":"text","content":"Hello."}]},`+
			`{"role":"user","parts":[{"type":"text","content":"Bye"}]}]`, `[{"role":"assistant","parts":[{"type":"text","content":"Bye."}]}]`),
	} {
		r := postOTLP(t, in, key, "application/json", "", body)
		require.Equal(t, http.StatusOK, r.Status, "span %d: %s", i, r.Body)
	}

	// Session sync: a snapshot, then the same session grown (appended).
	recs := claudeCodeSession("8d3f1c2e-5a8b-4c6d-9e0f-1a2b3c4d5e6f", 4, nil)
	importAs(t, in, key, "claude_code", sessionFile(recs[:len(recs)/2]))
	importAs(t, in, key, "claude_code", sessionFile(recs))

	// The log holds every kind of event the API produces today.
	rows, err := in.pool.Query(context.Background(), "SELECT DISTINCT type FROM events")
	require.NoError(t, err)
	seen := map[string]bool{}
	for rows.Next() {
		var typ string
		require.NoError(t, rows.Scan(&typ))
		seen[typ] = true
	}
	rows.Close()
	var missing []string
	for _, typ := range []string{"user.created.v1", "api_key.issued.v1", "user.reward_models_enabled_changed.v1",
		"trace.imported.v1", "trace.revised.v1", "trace.deleted.v1", "trace_source.renamed.v1", "otel.spans_received.v1",
		"annotation.added.v1", "annotation.edited.v1", "annotation.removed.v1",
		"reward_model.requested.v1", "reward_model.dataset_built.v1", "reward_model.training_started.v1", "reward_model.heartbeat.v1",
		"reward_model.training_succeeded.v1", "reward_model.training_failed.v1", "reward_model.retried.v1",
		"scores.traces_scored.v1", "scores.actions_scored.v1",
		"scoring_run.requested.v1", "scoring_run.started.v1", "scoring_run.succeeded.v1"} {
		if !seen[typ] {
			missing = append(missing, typ)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "event types the test meant to produce")
	var statuses []string
	rows, err = in.pool.Query(context.Background(), "SELECT DISTINCT status FROM rm_reward_models ORDER BY 1")
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		statuses = append(statuses, s)
	}
	rows.Close()
	require.Equal(t, []string{"failed", "queued", "running", "succeeded"}, statuses)

	before := dumpReadModel(t, in)
	for _, table := range []string{"rm_users", "rm_api_keys", "rm_traces", "rm_steps", "rm_spans", "rm_annotations", "rm_trace_sources",
		"rm_reward_models", "rm_trace_scores", "rm_action_scores", "rm_scoring_runs", "readmodel_applied"} {
		require.NotEmpty(t, before[table], "%s has rows to compare", table)
	}
	out, err = in.cli("replay", "readmodel")
	require.NoError(t, err, out)
	after := dumpReadModel(t, in)
	for table := range before {
		require.Equal(t, before[table], after[table], "table %s after replay", table)
	}
}
