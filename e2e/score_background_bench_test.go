package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/worker"
)

// BenchmarkScoreBackground is `make bench-score`'s background path (spec
// 001 "Learned action credit"): once a model is ready, traces that arrive
// are scored without a request. Burst: 2,000 traces imported at once, from
// arrival to every trace's published scores (trace score and action
// credit), in traces/s beside the engine's raw scoring of the same texts
// in-process with the same checkpoint. Steady: 200 traces arriving one by
// one at 10/s; each trace's latency from its import (rm_traces.updated_at)
// to its published trace score (the score event's time), p50 and p99. Both
// include the 1 s idle debounce this benchmark sets
// (CRITIC_SCORING_DEBOUNCE; the default is 30 s).
func BenchmarkScoreBackground(b *testing.B) {
	for range b.N {
		runScoreBackgroundBench(b)
	}
}

func runScoreBackgroundBench(b *testing.B) {
	const debounce = time.Second
	in, kafkaPort := startServeForJobs(b, "CRITIC_SCORING_DEBOUNCE="+debounce.String())
	key := in.newUser("background", false)
	ids := ratedTraces(b, in, key)
	base := tinyBase(b, in)
	startWorker(b, in, kafkaPort, "bench-bg")
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "bench-bg", "trace_ids": ids, "base_model": base})
	require.Equal(b, http.StatusOK, r.Status, string(r.Body))
	modelID := r.JSON(b)["id"].(string)
	require.Equal(b, "succeeded", in.waitModel(b, key, modelID, "succeeded", "failed")["status"], in.logText())
	ctx := context.Background()
	scored := func() int {
		var n int
		require.NoError(b, in.pool.QueryRow(ctx, `SELECT count(*) FROM rm_trace_scores s JOIN rm_traces t ON t.id = s.trace_id AND t.revision = s.revision
			WHERE s.model_id = $1 AND EXISTS (SELECT 1 FROM rm_action_scores a WHERE a.trace_id = t.id AND a.model_id = $1)`, modelID).Scan(&n))
		return n
	}
	waitScored := func(want int) {
		deadline := time.Now().Add(20 * time.Minute)
		for scored() < want {
			require.True(b, time.Now().Before(deadline), "only %d of %d traces scored", scored(), want)
			time.Sleep(50 * time.Millisecond)
		}
	}
	trace := func(prefix string, i int) string {
		return fmt.Sprintf(`{"id":"%s-%d","steps":[{"role":"user","content":"Where is order %d?"},`+
			`{"role":"assistant","content":"","tool_name":"lookup_order","tool_input":{"order_id":"%d"},"tool_call_id":"c"},`+
			`{"role":"tool","content":"in transit","tool_call_id":"c"},{"role":"assistant","content":"Order %d is in transit."}]}`, prefix, i, i, i, i)
	}

	// Burst.
	const burst = 2000
	var lines []string
	for i := range burst {
		lines = append(lines, trace("burst", i))
	}
	start := time.Now()
	for i := 0; i < burst; i += 1000 {
		in.importTraces(key, "stash", strings.Join(lines[i:i+1000], "\n"))
	}
	waitScored(len(ids) + burst)
	pipeline := time.Since(start)

	// The limit: the texts the worker scored (each run's items), the same
	// checkpoint, in-process.
	rows, err := in.pool.Query(ctx, `SELECT payload->>'items_key' FROM events WHERE type = 'scoring_run.requested.v1' AND payload->>'automatic' = 'true'`)
	require.NoError(b, err)
	var texts []string
	for rows.Next() {
		var k string
		require.NoError(b, rows.Scan(&k))
		raw, err := os.ReadFile(filepath.Join(in.dataDir, "blobs", k))
		require.NoError(b, err)
		var items jobs.ScoringItems
		require.NoError(b, json.Unmarshal(raw, &items))
		for _, it := range items.ActionScoreItems {
			texts = append(texts, it.Text)
		}
		texts = append(texts, items.Trace.Text)
	}
	rows.Close()
	var owner string
	require.NoError(b, in.pool.QueryRow(ctx, `SELECT owner_id FROM rm_reward_models WHERE id = $1`, modelID).Scan(&owner))
	modelDir, err := worker.ExtractArchive(filepath.Join(in.dataDir, "blobs", "reward-models", owner, modelID+".tar.gz"), b.TempDir())
	require.NoError(b, err)
	rm, err := model.LoadRewardModel(modelDir)
	require.NoError(b, err)
	start = time.Now()
	_, err = rm.Score(texts)
	require.NoError(b, err)
	rawDur := time.Since(start)
	fmt.Printf("score-background: burst of %d traces (%d texts) from arrival to published scores in %s = %.0f traces/s (incl. the %s debounce)\n",
		burst, len(texts), pipeline.Round(time.Millisecond), burst/pipeline.Seconds(), debounce)
	fmt.Printf("score-background: raw engine, the same %d texts in %s = %.0f traces/s\n", len(texts), rawDur.Round(time.Millisecond), burst/rawDur.Seconds())
	fmt.Printf("score-background: ratio background/raw = %.2f (goal ≥ 0.9)\n", rawDur.Seconds()/pipeline.Seconds())

	// Steady arrivals.
	const steady, rate = 200, 10
	for i := range steady {
		in.importTraces(key, "stash", trace("steady", i))
		time.Sleep(time.Second / rate)
	}
	waitScored(len(ids) + burst + steady)
	rows, err = in.pool.Query(ctx, `SELECT extract(epoch FROM s.created_at - t.updated_at) FROM rm_trace_scores s JOIN rm_traces t ON t.id = s.trace_id
		WHERE s.model_id = $1 AND t.external_id LIKE 'steady-%'`, modelID)
	require.NoError(b, err)
	var lat []float64
	for rows.Next() {
		var s float64
		require.NoError(b, rows.Scan(&s))
		lat = append(lat, s)
	}
	rows.Close()
	require.Len(b, lat, steady)
	sort.Float64s(lat)
	pct := func(p float64) time.Duration {
		return time.Duration(lat[min(len(lat)-1, int(p*float64(len(lat))))] * float64(time.Second)).Round(time.Millisecond)
	}
	fmt.Printf("score-background: steady %d traces/s, arrival → published trace score: p50 %s, p99 %s (incl. the %s debounce)\n", rate, pct(0.5), pct(0.99), debounce)
}
