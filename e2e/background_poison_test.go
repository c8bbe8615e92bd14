package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// A poisoned trace revision (spec 001 "Learned action credit": "failed
// trace revisions get at most three automatic attempts, while explicit Run
// remains retryable"): the model is trained by the real worker, which then
// stops; the test plays a worker through the worker service that fails
// every batch holding the poisoned trace. After three failed attempts
// background scoring requests that revision no more, the model counts it
// as failed, and an explicit score is still accepted and queued.
func TestBackgroundScoringStopsAPoisonedRevision(t *testing.T) {
	in, kafkaPort := startServeForJobs(t, "CRITIC_SCORING_DEBOUNCE=1s")
	key := in.newUser("owner", false)
	rated := ratedTraces(t, in, key)
	worker := startWorker(t, in, kafkaPort, "w1")
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "bg", "trace_ids": rated, "base_model": tinyBase(t, in), "epochs": 1})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	modelID := r.JSON(t)["id"].(string)
	m := in.waitModel(t, key, modelID, "succeeded", "failed")
	require.Equal(t, "succeeded", m["status"], "error: %v\n%s", m["error"], in.logText())
	require.NoError(t, worker.Process.Kill())
	_, _ = worker.Process.Wait()

	poisoned := in.importTraces(key, "stash", supportTraces("poison", 1, ""))[0]
	fail := func(batch events.ScoringBatchRequestedV1) {
		t.Helper()
		job, err := json.Marshal(jobs.ScoreBatchJob{BatchID: batch.BatchID, ModelID: batch.ModelID})
		require.NoError(t, err)
		for _, action := range []string{jobs.Claim, jobs.Fail} {
			body := jobs.Call{WorkerID: "poison-tester", Job: job, Error: "the worker crashed on this trace"}
			resp := in.do("POST", jobs.JobPath(jobs.KindScoreBatch, batch.BatchID, action), "e2e-worker-token", body)
			require.Equal(t, http.StatusOK, resp.Status, "%s: %s", action, resp.Body)
		}
	}
	batchesOf := func() []events.ScoringBatchRequestedV1 {
		t.Helper()
		rows, err := in.pool.Query(context.Background(), `SELECT payload FROM events WHERE type = $1 ORDER BY seq`, events.ScoringBatchRequested)
		require.NoError(t, err)
		defer rows.Close()
		var out []events.ScoringBatchRequestedV1
		for rows.Next() {
			var p events.ScoringBatchRequestedV1
			require.NoError(t, rows.Scan(&p))
			for _, run := range p.Runs {
				if run.TraceID == poisoned {
					out = append(out, p)
				}
			}
		}
		return out
	}
	failed := 0
	deadline := time.Now().Add(2 * time.Minute)
	for failed < 3 {
		require.True(t, time.Now().Before(deadline), "background scoring requested %d batches for the poisoned trace:\n%s", failed, in.logText())
		if b := batchesOf(); len(b) > failed {
			fail(b[failed])
			failed++
			continue
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Several debounce periods and scheduler ticks later: no fourth attempt.
	time.Sleep(6 * time.Second)
	require.Len(t, batchesOf(), 3, "a revision gets at most three automatic attempts")
	bg := in.do("GET", "/api/v1/rm/reward-models/"+modelID, key, nil).JSON(t)["background_scoring"].(map[string]any)
	require.Equal(t, float64(1), bg["failed"], "the poisoned revision counts as failed: %v", bg)
	require.Equal(t, float64(0), bg["queued"])

	// An explicit score is still accepted.
	sr := in.do("POST", "/api/v1/rm/traces/"+poisoned+"/score", key, map[string]any{"reward_model_id": modelID})
	require.Equal(t, http.StatusAccepted, sr.Status, string(sr.Body))
	require.NotEmpty(t, sr.JSON(t)["id"], "the explicit run: %s", sr.Body)
}
