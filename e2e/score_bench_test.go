package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/worker"
)

// BenchmarkScore measures `make bench-score`: 10,000 traces scored by a
// trained tiny model through the whole pipeline (request → dataset → Kafka →
// `critic worker` → worker service → events → read model), beside the
// engine's raw scoring of the same texts in-process with the same checkpoint
// (the limit). The pipeline time includes the (small) training on the rated
// traces; it is printed separately.
func BenchmarkScore(b *testing.B) {
	for range b.N {
		runScoreBench(b)
	}
}

func runScoreBench(b *testing.B) {
	in, kafkaPort := startServeForJobs(b)
	key := in.newUser("scorer", false)
	const traces = 10000
	var lines []string
	for i := range traces {
		lines = append(lines, fmt.Sprintf(`{"id":"bulk-%d","steps":[{"role":"user","content":"Where is order %d?"},`+
			`{"role":"assistant","content":"","tool_name":"lookup_order","tool_input":{"order_id":"%d"},"tool_call_id":"c"},`+
			`{"role":"tool","content":"in transit","tool_call_id":"c"},{"role":"assistant","content":"Order %d is in transit."}]}`, i, i, i, i))
	}
	for i := 0; i < traces; i += 1000 {
		in.importTraces(key, "stash", strings.Join(lines[i:i+1000], "\n"))
	}
	ids := ratedTraces(b, in, key)
	base := tinyBase(b, in)
	startWorker(b, in, kafkaPort, "bench")

	start := time.Now()
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "bench", "trace_ids": ids, "base_model": base})
	require.Equal(b, http.StatusOK, r.Status, string(r.Body))
	id := r.JSON(b)["id"].(string)
	var m map[string]any
	for {
		m = in.do("GET", "/api/v1/rm/reward-models/"+id, key, nil).JSON(b)
		if m["status"] == "succeeded" || m["status"] == "failed" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	pipeline := time.Since(start)
	require.Equal(b, "succeeded", m["status"], "%v", m["error"])
	var scored int
	require.NoError(b, in.pool.QueryRow(context.Background(), `SELECT count(*) FROM rm_trace_scores WHERE model_id = $1`, id).Scan(&scored))
	require.Equal(b, traces+len(ids), scored)

	// The limit: the same texts, the same checkpoint, scored in-process.
	var dsKey, owner string
	require.NoError(b, in.pool.QueryRow(context.Background(), `SELECT dataset_key, owner_id FROM rm_reward_models WHERE id = $1`, id).Scan(&dsKey, &owner))
	raw, err := os.ReadFile(filepath.Join(in.dataDir, "blobs", dsKey))
	require.NoError(b, err)
	var ds rewardmodels.Dataset
	require.NoError(b, json.Unmarshal(raw, &ds))
	dir := b.TempDir()
	modelDir, err := worker.ExtractArchive(filepath.Join(in.dataDir, "blobs", "reward-models", owner, id+".tar.gz"), dir)
	require.NoError(b, err)
	rm, err := model.LoadRewardModel(modelDir)
	require.NoError(b, err)
	// The same texts the worker scored: every trace and every action.
	texts := make([]string, 0, len(ds.ScoreItems)+len(ds.ActionScoreItems))
	for _, it := range ds.ScoreItems {
		texts = append(texts, it.Text)
	}
	for _, it := range ds.ActionScoreItems {
		texts = append(texts, it.Text)
	}
	start = time.Now()
	_, err = rm.Score(texts)
	require.NoError(b, err)
	rawDur := time.Since(start)
	training := m["metrics"].(map[string]any)["seconds"].(float64)
	n := len(ds.ScoreItems)
	fmt.Printf("score: pipeline %d traces (+%d actions) in %s = %.0f traces/s (request → succeeded, incl. training; worker reported %.1fs for train+score+upload)\n",
		n, len(ds.ActionScoreItems), pipeline.Round(time.Millisecond), float64(n)/pipeline.Seconds(), training)
	fmt.Printf("score: raw engine, the same %d texts in %s = %.0f traces/s\n", len(texts), rawDur.Round(time.Millisecond), float64(n)/rawDur.Seconds())
	fmt.Printf("score: ratio pipeline/raw = %.2f (target ≥ 0.7)\n", rawDur.Seconds()/pipeline.Seconds())
}
