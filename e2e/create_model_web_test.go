package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCreateModelWeb runs web/e2e/create-model.spec.ts in Chromium against
// the real binary and a real worker (issue 35): the worker has the demo
// base `make run` creates and no hub (HF_ENDPOINT unreachable), so the
// dialog must offer the demo base first with the spec's default path
// preselected, store what Train sends, and a model the hub failed must
// offer no Retry until something changed.
func TestCreateModelWeb(t *testing.T) {
	webDir := requireBrowser(t)
	in, kafkaPort := startServeForJobs(t)
	key := in.newUser("one-click", false)

	workerData := t.TempDir()
	demo := demoBaseIn(t, in, workerData)
	startWorkerWith(t, in, kafkaPort, "cw1", "CRITIC_DATA_DIR="+workerData, "HF_ENDPOINT=http://127.0.0.1:1", "HF_TOKEN=",
		"CRITIC_WORKER_METRICS_ADDR=off", "CRITIC_MODEL_ROOTS="+t.TempDir())
	ids := ratedTraces(t, in, key)

	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "from the hub", "trace_ids": ids})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	hubFailed := r.JSON(t)["id"].(string)
	in.waitModel(t, key, hubFailed, "failed")
	for deadline := time.Now().Add(time.Minute); len(in.baseModels(t, key).Bases) < 2; time.Sleep(200 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the worker's report never arrived:\n%s", in.logText())
	}

	require.Greater(t, runSpec(t, webDir, "create model", "create-model.spec.ts", in.url, key,
		"CRITIC_E2E_DEMO_BASE="+demo, "CRITIC_E2E_HUB_FAILED_MODEL="+hubFailed), 0, "no browser test ran")
}
