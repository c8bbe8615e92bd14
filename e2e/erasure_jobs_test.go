package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/evaluator"
)

// TestDeletedTraceLeavesNoJobInputs: what the jobs and the API keep of a
// trace beyond its stream. A model is trained by the real worker, which then
// stops; a trace carrying a marker is scored explicitly with it (the run's
// items blob holds the trace's rendered text) and commented on with an
// Idempotency-Key (the stored answer quotes the comment). After DELETE of
// the trace the marker is in no file of the blob store, nowhere in a
// pg_dump of the database and in no stored answer.
func TestDeletedTraceLeavesNoJobInputs(t *testing.T) {
	in, kafkaPort := startServeForJobs(t)
	key := in.newUser("jobs-shredder", false)
	rated := ratedTraces(t, in, key)
	worker := startWorker(t, in, kafkaPort, "erasure-w1")
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "erasure", "trace_ids": rated, "base_model": tinyBase(t, in), "epochs": 1})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	modelID := r.JSON(t)["id"].(string)
	m := in.waitModel(t, key, modelID, "succeeded", "failed")
	require.Equal(t, "succeeded", m["status"], "error: %v\n%s", m["error"], in.logText())
	require.NoError(t, worker.Process.Kill())
	_, _ = worker.Process.Wait()

	const gone = "MARKER-JOBS-5d1e"
	id := in.importTraces(key, "stash", `{"id":"gone","steps":[{"role":"user","content":"My order `+gone+` is late."},`+
		`{"role":"assistant","content":"Sure! Order `+gone+` ships today."}]}`)[0]
	sr := in.do("POST", "/api/v1/rm/traces/"+id+"/score", key, map[string]any{"reward_model_id": modelID})
	require.Equal(t, http.StatusAccepted, sr.Status, string(sr.Body))

	tr := in.getTrace(t, key, id)
	body, err := json.Marshal(map[string]any{"step_id": tr.Steps[1]["id"], "rating": 1, "comment": "Customer " + gone + " needs a call."})
	require.NoError(t, err)
	status, _, err := keyedSender(30*time.Second)("POST", in.url, "/api/v1/rm/traces/"+id+"/annotations", key, "erasure-comment-1", body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)

	// Before the deletion both hold the marker in clear.
	blobs := filepath.Join(in.dataDir, "blobs")
	require.NotEmpty(t, filesWith(t, blobs, gone), "the scoring run's items blob holds the trace's text")
	var cached int
	require.NoError(t, in.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM idempotency_keys WHERE position(convert_to($1, 'UTF8') in body) > 0", gone).Scan(&cached))
	require.Equal(t, 1, cached, "the stored idempotent answer quotes the comment")

	d := in.do("DELETE", "/api/v1/rm/traces/"+id, key, nil)
	require.Equal(t, http.StatusNoContent, d.Status, string(d.Body))
	waitReadModel(t, in)

	require.Empty(t, filesWith(t, blobs, gone), "no blob holds the deleted trace (scoring inputs included)")
	require.Empty(t, linesWith(pgDump(t, in), gone), "pg_dump holds nothing of the deleted trace")
	// pg_dump writes a bytea column in hex, so the cached answers are
	// searched in the table itself.
	require.NoError(t, in.pool.QueryRow(context.Background(),
		"SELECT count(*) FROM idempotency_keys WHERE position(convert_to($1, 'UTF8') in body) > 0", gone).Scan(&cached))
	require.Zero(t, cached, "no stored idempotent answer quotes the deleted trace")
	require.Equal(t, http.StatusOK, in.do("GET", "/api/v1/rm/traces/"+rated[0], key, nil).Status, "the other traces stay")
}

// TestDeletedTraceLeavesTheBenchmark: two contributed rollouts of a
// benchmark group with verified outcomes make a benchmark item quoting
// both; after DELETE of the failed one, whose answer carries a marker, the
// marker is nowhere in a pg_dump (the frozen version's event keeps ids
// only) and `critic evaluator benchmark verify` still passes.
func TestDeletedTraceLeavesTheBenchmark(t *testing.T) {
	in := startServe(t)
	key := in.newUser("bench-shredder", false)
	owner := in.do("GET", "/api/v1/rm/me", key, nil).JSON(t)["user_id"].(string)
	group := ""
	for i := 0; group == ""; i++ {
		if g := fmt.Sprintf("rollouts-%d", i); evaluator.InBenchmark(owner + "/" + g) {
			group = g
		}
	}
	const gone = "MARKER-BENCH-2c7b"
	rollout := func(id, answer, outcome string) string {
		return `{"id":"` + id + `","metadata":{"group":"` + group + `","outcome":"` + outcome + `"},"steps":[` +
			`{"role":"user","content":"Sort 3, 1, 2 ascending"},{"role":"assistant","content":"` + answer + `"}]}`
	}
	r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": "stash", "contribute": true, "data": rollout("good", "1, 2, 3", "success") + "\n" +
		rollout("bad", "3, 2, 1 "+gone, "failure")})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	ids := r.JSON(t)["trace_ids"].([]any)
	out, err := in.cli("evaluator", "benchmark", "freeze")
	require.NoError(t, err, out)
	require.Contains(t, out, ": 1 items")

	d := in.do("DELETE", "/api/v1/rm/traces/"+ids[1].(string), key, nil)
	require.Equal(t, http.StatusNoContent, d.Status, string(d.Body))
	waitReadModel(t, in)
	require.Empty(t, linesWith(pgDump(t, in), gone), "pg_dump holds nothing of the deleted trace (the benchmark's event included)")
	out, err = in.cli("evaluator", "benchmark", "verify")
	require.NoError(t, err, out)
	require.Contains(t, out, "1 benchmark version(s) rebuild from the log exactly as frozen")
}
