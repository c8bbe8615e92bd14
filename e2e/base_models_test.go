package e2e

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/pg/pgtest"
)

// baseModelList is GET /base-models.
type baseModelList struct {
	Bases []struct {
		ID             string   `json:"id"`
		Name           string   `json:"name"`
		Source         string   `json:"source"`
		Reachable      bool     `json:"reachable"`
		Default        bool     `json:"default"`
		Params         *int64   `json:"params"`
		SizeBytes      *int64   `json:"size_bytes"`
		SecondsPerPair *float64 `json:"seconds_per_pair"`
	} `json:"bases"`
	Hint    *string `json:"hint"`
	Compute struct {
		Workers    int     `json:"workers"`
		GPUWorkers int     `json:"gpu_workers"`
		Device     *string `json:"device"`
	} `json:"compute"`
}

func (in *instance) baseModels(t testing.TB, key string) baseModelList {
	t.Helper()
	r := in.do("GET", "/api/v1/rm/base-models", key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var l baseModelList
	require.NoError(t, json.Unmarshal(r.Body, &l), string(r.Body))
	return l
}

// demoBaseIn writes the demo base as `critic run` does — a tiny random
// Qwen3 at <dataDir>/models/demo-qwen3-tiny — with the test tokenizer.
func demoBaseIn(t testing.TB, in *instance, dataDir string) string {
	out := filepath.Join(dataDir, "models", rewardmodels.DemoBaseName)
	tok := filepath.Join(pgtest.ModuleRoot(t), "gpuworker", "testdata", "tinytok")
	o, err := in.cli("model", "init", "--arch", "qwen3", "--hidden", "32", "--layers", "1", "--heads", "2", "--kv-heads", "1",
		"--head-dim", "16", "--intermediate", "64", "--tokenizer", tok, "--out", out)
	require.NoError(t, err, o)
	return out
}

// TestBaseModelsWhereTheUserIs (issue 35): GET /base-models lists what the
// workers can load now. Without a worker it says so; a worker with the
// demo base in its data directory and no hub (HF_ENDPOINT unreachable, as
// on a machine without internet) makes the demo base the first choice,
// the hub default unreachable and last, with a hint naming HF_ENDPOINT,
// HF_TOKEN and the demo base. Training on the default then fails with the
// same advice instead of a raw network error, and the listed demo base
// trains.
func TestBaseModelsWhereTheUserIs(t *testing.T) {
	in, kafkaPort := startServeForJobs(t)
	key := in.newUser("bases", false)

	none := in.baseModels(t, key)
	require.Zero(t, none.Compute.Workers)
	require.Nil(t, none.Compute.Device)
	require.NotNil(t, none.Hint)
	require.Contains(t, *none.Hint, "No worker has reported")
	require.Len(t, none.Bases, 1)
	require.Equal(t, rewardmodels.DefaultBaseModel, none.Bases[0].ID)
	require.False(t, none.Bases[0].Reachable)
	require.True(t, none.Bases[0].Default)

	workerData := t.TempDir()
	demo := demoBaseIn(t, in, workerData)
	startWorkerWith(t, in, kafkaPort, "bw1", "CRITIC_DATA_DIR="+workerData, "HF_ENDPOINT=http://127.0.0.1:1", "HF_TOKEN=",
		"CRITIC_WORKER_METRICS_ADDR=off", "CRITIC_MODEL_ROOTS="+t.TempDir()) // not the other tests' bases in the temporary directory

	var l baseModelList
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if l = in.baseModels(t, key); l.Compute.Workers == 1 && len(l.Bases) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker's report never arrived (last answer %+v):\n%s", l, in.logText())
		}
	}
	first, last := l.Bases[0], l.Bases[1]
	require.Equal(t, demo, first.ID)
	require.Equal(t, rewardmodels.DemoBaseName, first.Name)
	require.Equal(t, "demo", first.Source)
	require.True(t, first.Reachable)
	require.False(t, first.Default)
	require.NotNil(t, first.Params)
	require.Positive(t, *first.Params)
	require.NotNil(t, first.SizeBytes)
	require.NotNil(t, first.SecondsPerPair)
	require.Equal(t, rewardmodels.DefaultBaseModel, last.ID)
	require.Equal(t, "hub", last.Source)
	require.False(t, last.Reachable)
	require.True(t, last.Default)
	require.NotNil(t, last.SecondsPerPair)
	require.Greater(t, *last.SecondsPerPair, *first.SecondsPerPair, "the 0.6B default costs more per pair than the tiny demo")
	require.Equal(t, "cpu", *l.Compute.Device)
	require.NotNil(t, l.Hint)
	require.Contains(t, *l.Hint, "HF_ENDPOINT")
	require.Contains(t, *l.Hint, "HF_TOKEN")
	require.Contains(t, *l.Hint, "choose a base model this server has locally: "+rewardmodels.DemoBaseName)

	ids := ratedTraces(t, in, key)
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "from the hub", "trace_ids": ids})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	m := in.waitModel(t, key, r.JSON(t)["id"].(string), "failed")
	msg, _ := m["error"].(string)
	require.Contains(t, msg, rewardmodels.HubUnreachablePhrase+" at http://127.0.0.1:1 to download Qwen/Qwen3-0.6B")
	require.Contains(t, msg, "Set HF_ENDPOINT on the workers")
	require.Contains(t, msg, "HF_TOKEN")
	require.Contains(t, msg, "choose a base model this server has locally: "+rewardmodels.DemoBaseName)
	require.NotContains(t, msg, "Get \"http://127.0.0.1:1/Qwen", "not the raw request error")

	r = in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "on the demo base", "trace_ids": ids, "base_model": first.ID})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	in.waitModel(t, key, r.JSON(t)["id"].(string), "succeeded")
}
