package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/metrics/metricstest"
)

// doWithID is in.do with an X-Request-Id header.
func (in *instance) doWithID(method, path, key, requestID string, body any) (response, string) {
	in.t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(in.t, err)
	req, err := http.NewRequest(method, in.url+path, bytes.NewReader(raw))
	require.NoError(in.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", requestID)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(in.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(in.t, err)
	return response{Status: resp.StatusCode, Body: b}, resp.Header.Get("X-Request-Id")
}

// startWorkerWithMetrics runs `critic worker` serving its own /metrics on a
// free port, and returns that URL.
func startWorkerWithMetrics(t *testing.T, in *instance, kafkaPort int, id string) string {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(in.bin, "worker")
	cmd.Env = append(os.Environ(), "CRITIC_API_URL="+in.url, "CRITIC_WORKER_TOKEN=e2e-worker-token",
		fmt.Sprintf("KAFKA_BROKERS=127.0.0.1:%d", kafkaPort), "BLOB_URL=file://"+filepath.Join(in.dataDir, "blobs"),
		"CRITIC_DATA_DIR="+t.TempDir(), "CRITIC_WORKER_ID="+id, "DATABASE_URL=", "CRITIC_WORKER_METRICS_ADDR="+addr)
	cmd.Stdout = &lockedWriter{mu: &in.logMu, w: in.logs}
	cmd.Stderr = &lockedWriter{mu: &in.logMu, w: in.logs}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	url := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "the worker never served /healthz:\n%s", in.logText())
	return url
}

func (in *instance) eventTypesOf(correlationID string) []string {
	rows, err := in.pool.Query(context.Background(), `SELECT DISTINCT type FROM events WHERE correlation_id = $1 ORDER BY 1`, correlationID)
	require.NoError(in.t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(in.t, rows.Scan(&s))
		out = append(out, s)
	}
	return out
}

// TestOperatingCritic is the operator's view of a scripted run (an import,
// ratings, a model trained by a standalone worker, a scoring run, queries):
// the API's and the worker's /metrics moved by exactly what happened, and
// the request ids sent in are the correlation ids of every event the
// requests caused, the worker's reports included, and in the worker's log.
func TestOperatingCritic(t *testing.T) {
	in, kafkaPort := startServeForJobs(t)
	key := in.newUser("operator", false)
	ids := ratedTraces(t, in, key) // 1 import, 12 annotations
	base := tinyBase(t, in)
	workerURL := startWorkerWithMetrics(t, in, kafkaPort, "ops-w1")

	r, echoed := in.doWithID("POST", "/api/v1/rm/reward-models", key, "e2e-train-1",
		map[string]any{"name": "ops-v1", "trace_ids": ids, "base_model": base, "epochs": 1})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "e2e-train-1", echoed)
	modelID := r.JSON(t)["id"].(string)
	m := in.waitModel(t, key, modelID, "succeeded", "failed")
	require.Equal(t, "succeeded", m["status"], "error: %v\n%s", m["error"], in.logText())

	sr, _ := in.doWithID("POST", "/api/v1/rm/traces/"+ids[0]+"/score", key, "e2e-score-1", map[string]any{"reward_model_id": modelID})
	require.Equal(t, http.StatusAccepted, sr.Status, string(sr.Body))
	run := sr.JSON(t)
	deadline := time.Now().Add(2 * time.Minute)
	for run["status"] != "succeeded" && run["status"] != "failed" && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		d := in.getTrace(t, key, ids[0])
		require.Len(t, d.ScoringRuns, 1)
		run = d.ScoringRuns[0].(map[string]any)
	}
	require.Equal(t, "succeeded", run["status"], "%v", run["error"])

	// Queries: poll until the snapshot shows the scores, counting the
	// answered ones; then one refused statement.
	okQueries := 0
	require.Eventually(t, func() bool {
		q := in.do("POST", "/api/v1/rm/query", key, map[string]any{"sql": `SELECT count(*) FROM scores WHERE reward_model_id = '` + modelID + `'`})
		if q.Status != http.StatusOK {
			return false
		}
		okQueries++
		return regexp.MustCompile(`\[\[4\]\]`).Match(q.Body)
	}, 30*time.Second, 100*time.Millisecond)
	require.Equal(t, http.StatusUnprocessableEntity, in.do("POST", "/api/v1/rm/query", key, map[string]any{"sql": "DELETE FROM traces"}).Status)

	// The API's metrics.
	var api metricstest.Families
	require.Eventually(t, func() bool {
		api = metricstest.Scrape(t, in.url+"/metrics")
		return api.Value("critic_jobs") == 0 && api.Value("critic_relay_lag_events") == 0 && api.Value("critic_readmodel_lag_events") == 0
	}, 30*time.Second, 100*time.Millisecond)
	require.Equal(t, float64(1), api.Value("critic_http_requests_total", "route=POST /api/v1/rm/traces/import", "code=200"))
	require.Equal(t, float64(12), api.Value("critic_http_requests_total", "route=POST /api/v1/rm/traces/{trace_id}/annotations", "code=200"))
	require.Equal(t, float64(1), api.Value("critic_http_requests_total", "route=POST /api/v1/rm/reward-models", "code=200"))
	require.Equal(t, float64(1), api.Value("critic_http_requests_total", "route=POST /api/v1/rm/traces/{trace_id}/score", "code=202"))
	require.Equal(t, float64(okQueries), api.Value("critic_query_duration_seconds", "outcome=ok"))
	require.Equal(t, float64(1), api.Value("critic_query_duration_seconds", "outcome=rejected"))
	require.Equal(t, float64(1), api.Value("critic_job_claims_total", "kind=train", "outcome=claimed"))
	require.Equal(t, float64(1), api.Value("critic_job_reports_total", "kind=train", "outcome=succeeded"))
	require.Equal(t, float64(1), api.Value("critic_job_claims_total", "kind=score", "outcome=claimed"))
	require.Equal(t, float64(1), api.Value("critic_job_reports_total", "kind=score", "outcome=succeeded"))
	require.Equal(t, float64(0), api.Value("critic_job_lease_expiries_total"))
	require.Equal(t, float64(in.eventCount()), api.Value("critic_relay_published_events_total"))
	for _, p := range []string{"readmodel", "snapshot", "dispatch"} {
		require.GreaterOrEqual(t, api.Value("critic_projection_events_total", "projection="+p), float64(in.eventCount()), p)
	}
	require.Equal(t, float64(1), api.Value("critic_duckdb_snapshots"))
	for _, route := range api.LabelValues("critic_http_requests_total", "route") {
		for _, id := range append([]string{modelID}, ids...) {
			require.NotContains(t, route, id, "an id became a label")
		}
	}

	// The worker's own metrics.
	w := metricstest.Scrape(t, workerURL+"/metrics")
	require.Equal(t, float64(1), w.Value("critic_worker_job_duration_seconds", "kind=train", "outcome=succeeded"))
	require.Equal(t, float64(1), w.Value("critic_worker_job_duration_seconds", "kind=score", "outcome=succeeded"))
	require.Equal(t, float64(1), w.Value("critic_worker_job_duration_seconds", "kind=train"), "no other outcome")
	require.Greater(t, w.Value("critic_worker_train_steps_total"), float64(0))
	require.Greater(t, w.Value("critic_worker_train_tokens_per_second"), float64(0))
	require.Equal(t, float64(3), w.Value("critic_worker_scored_sequences_total"), "the tool call and the final answer of one trace, and the whole trace")
	require.Greater(t, w.Value("critic_worker_scoring_sequences_per_second"), float64(0))
	require.False(t, w.Has("critic_http_requests_total"), "the worker serves no API")

	// One id, from the request to the worker's reports.
	require.Subset(t, in.eventTypesOf("e2e-train-1"), []string{"reward_model.requested.v1", "reward_model.dataset_built.v1",
		"reward_model.training_started.v1", "reward_model.training_succeeded.v1"})
	require.Subset(t, in.eventTypesOf("e2e-score-1"), []string{"scoring_run.requested.v1", "scoring_run.started.v1",
		"scoring_run.succeeded.v1", "scores.actions_scored.v1"})
	logs := in.logText()
	require.Regexp(t, `msg="claimed training job".*request_id=e2e-train-1`, logs)
	require.Regexp(t, `msg="claimed scoring job".*request_id=e2e-score-1`, logs)
}

// TestLeaseExpiryIsCounted: a worker killed mid-training shows up on the
// API's /metrics as a lease expiry of a training job (the model goes back
// to the queue), and the running gauge goes back to zero.
func TestLeaseExpiryIsCounted(t *testing.T) {
	in, kafkaPort := startServeForJobs(t, "CRITIC_WORKER_LEASE=3s")
	key := in.newUser("leases", false)
	ids := ratedTraces(t, in, key)
	base := sizedBase(t, in, "64", "2") // slow enough to interrupt
	w := startWorker(t, in, kafkaPort, "doomed")
	id := longTraining(t, in, key, ids, base)
	in.waitRunningWithProgress(t, key, id)
	running := metricstest.Scrape(t, in.url+"/metrics")
	require.Equal(t, float64(1), running.Value("critic_jobs", "kind=train", "status=running"))
	require.Equal(t, float64(0), running.Value("critic_job_lease_expiries_total"))

	require.NoError(t, w.Process.Signal(syscall.SIGKILL))
	_, _ = w.Process.Wait()
	m := in.waitModel(t, key, id, "queued", "failed", "succeeded")
	require.Equal(t, "queued", m["status"], "the lost run is requeued for another worker")

	var after metricstest.Families
	require.Eventually(t, func() bool {
		after = metricstest.Scrape(t, in.url+"/metrics")
		return after.Value("critic_jobs", "kind=train", "status=running") == 0
	}, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, float64(1), after.Value("critic_job_lease_expiries_total", "kind=train"))
	require.Equal(t, float64(0), after.Value("critic_job_lease_expiries_total", "kind=score"))
	require.Equal(t, float64(1), after.Value("critic_job_claims_total", "kind=train", "outcome=claimed"))
	require.Equal(t, float64(0), after.Value("critic_job_reports_total", "kind=train"), "the killed worker reported nothing")
}
