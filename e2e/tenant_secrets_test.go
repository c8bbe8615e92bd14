package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/llm/llmtest"
	"github.com/criticml/critic/platform/pg/pgtest"
)

// Issue 31 items 1 and 5 through the built binaries. One account trains a
// model; another names paths on the server as its base_model (/etc, the
// first account's training output on the worker) and gets a 422 naming
// base_model and no server path. A GEPA run whose task_api_base is a
// loopback listener, with the operator's canary OPENAI_API_KEY in the
// server's and the worker's environment, fails naming
// CRITIC_ALLOWED_API_BASES, and the listener never hears from it.
func TestTenantInputReachesNoServerSecretOrPath(t *testing.T) {
	const canary = "sk-operator-canary-31c7e0"
	var mu sync.Mutex
	var heard []string // Authorization headers the tenant's listener got
	listener := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		heard = append(heard, r.Header.Get("Authorization"))
		mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(listener.Close)
	// The operator's own reflection endpoint (OPENAI_BASE_URL): the
	// operator's key may go there.
	refl := llmtest.New(t)
	refl.Handle(func(r llmtest.Request) llmtest.Reply {
		if strings.Contains(r.Last(), "You are naming a skill") {
			return llmtest.Reply{Content: "<name>refunds</name>\n<description>Use for refunds.</description>"}
		}
		return llmtest.Reply{Content: "<new_skill_body>\nLook the order up.\n</new_skill_body>"}
	})

	// Local base models only under the API's data dir/models.
	in, kafkaPort := startServeForJobs(t, "CRITIC_MODEL_ROOTS=", "OPENAI_API_KEY="+canary)
	alice, mallory := in.newUser("alice", false), in.newUser("mallory", false)
	base := filepath.Join(in.dataDir, "models", "tiny")
	o, err := in.cli("model", "init", "--arch", "qwen3", "--hidden", "32", "--layers", "1", "--heads", "2", "--kv-heads", "1",
		"--head-dim", "16", "--intermediate", "64", "--tokenizer", filepath.Join(pgtest.ModuleRoot(t), "gpuworker", "testdata", "tinytok"), "--out", base)
	require.NoError(t, err, o)
	workerData := t.TempDir()
	startWorkerWith(t, in, kafkaPort, "w1", "CRITIC_DATA_DIR="+workerData, "OPENAI_API_KEY="+canary, "OPENAI_BASE_URL="+refl.URL)

	r := in.do("POST", "/api/v1/rm/reward-models", alice, map[string]any{"name": "alice-rm", "trace_ids": ratedTraces(t, in, alice), "base_model": base, "epochs": 1})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	modelID := r.JSON(t)["id"].(string)
	m := in.waitModel(t, alice, modelID, "succeeded", "failed")
	require.Equal(t, "succeeded", m["status"], "%v", m["error"])

	// Mallory's base_model: /etc, alice's training output and the worker's
	// checkpoint cache are refused at the API, naming no server path.
	ids := ratedTraces(t, in, mallory)
	for _, bad := range []string{"/etc", filepath.Join(workerData, "worker", "jobs", modelID, "attempt-1"),
		filepath.Join(workerData, "worker", "checkpoints"), filepath.Join(in.dataDir, "models", "..", "blobs")} {
		r := in.do("POST", "/api/v1/rm/reward-models", mallory, map[string]any{"name": "steal", "trace_ids": ids, "base_model": bad})
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s: %s", bad, r.Body)
		var body struct{ Field, Detail string }
		require.NoError(t, json.Unmarshal(r.Body, &body))
		require.Equal(t, "base_model", body.Field, string(r.Body))
		for _, p := range []string{"/etc", workerData, in.dataDir, "/tmp", "/worker/"} {
			require.NotContains(t, string(r.Body), p, "the answer to %s names a server path", bad)
		}
	}

	// A loopback task_api_base: queued (its syntax is fine), then failed by
	// the worker before any byte reaches the listener.
	r = in.do("POST", "/api/v1/rm/gepa-runs", alice, map[string]any{"reward_model_id": modelID, "task_model": "openai/x",
		"task_api_base": listener.URL + "/v1", "reflection_model": "openai/reflector", "max_metric_calls": 10})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	run := in.waitGepa(t, alice, r.JSON(t)["id"].(string), "succeeded", "failed")
	require.Equal(t, "failed", run["status"])
	require.Contains(t, run["error"], "CRITIC_ALLOWED_API_BASES")
	require.NotContains(t, run["error"], canary)
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, heard, "the tenant's listener was reached")
	require.False(t, strings.Contains(in.logText(), "Bearer "+canary))
}
