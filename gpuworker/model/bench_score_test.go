package model_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/model"
)

// scoreBenchScenario is one timed workload of BenchmarkScoreEngine, written to
// CRITIC_BENCH_SCORE_OUT so torch_reference.py score-bench runs the very same batches.
type scoreBenchScenario struct {
	Name    string             `json:"name"`
	Seqs    [][]int            `json:"seqs"`
	Plan    []model.ScoreBatch `json:"plan"`
	Seconds float64            `json:"go_seconds"`
	First   float64            `json:"go_first_seconds"` // compile + first run
}

// scoreBenchLens is "a realistic mix" of agent-text lengths: 32 texts, log-uniform
// between 64 and 1024 tokens (many short actions, a few long transcripts).
func scoreBenchLens(rng *rand.Rand) []int {
	lens := make([]int, 32)
	for i := range lens {
		lens[i] = int(math.Round(64 * math.Pow(16, rng.Float64())))
	}
	return lens
}

// BenchmarkScoreEngine scores, through a Qwen3-0.6B-shaped model with random weights,
// (a) one batch of 8 × 1024 tokens and (b) 32 texts of mixed length (64–1024) with
// ScoreBucketed at the default token budget; each scenario runs once to compile, then
// once timed. Reports seq/s per scenario and peak RSS; with CRITIC_BENCH_SCORE_OUT set
// it writes the inputs, the batch plan and the Go timings as JSON for the PyTorch side
// (gpuworker/scripts/bench_score_engine.sh). Opt-in: CRITIC_BENCH_SCORE=1 (2.4 GB of
// weights, minutes per scenario); CRITIC_BENCH_SCORE_LAYERS=n keeps n of the 28 layers.
func BenchmarkScoreEngine(b *testing.B) {
	if os.Getenv("CRITIC_BENCH_SCORE") == "" {
		b.Skip("set CRITIC_BENCH_SCORE=1")
	}
	layers := 28
	if v := os.Getenv("CRITIC_BENCH_SCORE_LAYERS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "CRITIC_BENCH_SCORE_LAYERS")
		layers = n
	}
	spec := model.TinySpec{Family: model.FamilyQwen3, Hidden: 1024, Layers: layers, Heads: 16,
		KVHeads: 8, HeadDim: 128, MLP: 3072, Vocab: 151936, PadTokenID: 151643}
	model.SetEngineGC() // as the worker runs
	backend, err := model.NewBackend()
	require.NoError(b, err)
	cfg, err := model.NewBaseConfig(spec)
	require.NoError(b, err)
	m, err := model.NewRandom(backend, cfg, 0)
	require.NoError(b, err)
	defer m.Finalize()
	sc, err := m.NewScorer()
	require.NoError(b, err)

	rng := rand.New(rand.NewPCG(15, 15))
	seqsOf := func(lens []int) [][]int {
		seqs := make([][]int, len(lens))
		for i, n := range lens {
			seqs[i] = make([]int, n)
			for j := range seqs[i] {
				seqs[i][j] = rng.IntN(spec.Vocab - 1) // any id but the pad id
				if seqs[i][j] >= spec.PadTokenID {
					seqs[i][j]++
				}
			}
		}
		return seqs
	}
	full := []int{1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024}
	scenarios := []*scoreBenchScenario{{Name: "8x1024", Seqs: seqsOf(full)}, {Name: "mix64-1024", Seqs: seqsOf(scoreBenchLens(rng))}}
	if only := os.Getenv("CRITIC_BENCH_SCORE_ONLY"); only != "" { // one scenario by name (8x1024, mix64-1024), to profile it
		var kept []*scoreBenchScenario
		for _, s := range scenarios {
			if s.Name == only {
				kept = append(kept, s)
			}
		}
		require.NotEmpty(b, kept, "CRITIC_BENCH_SCORE_ONLY=%q names no scenario", only)
		scenarios = kept
	}
	for range b.N {
		for _, s := range scenarios {
			lens := make([]int, len(s.Seqs))
			for i, q := range s.Seqs {
				lens[i] = len(q)
			}
			s.Plan = model.PlanBuckets(lens, model.DefaultScoreTokens)
			t0 := time.Now()
			_, err := model.ScoreBucketed(sc, s.Seqs, model.DefaultScoreTokens)
			require.NoError(b, err)
			s.First = time.Since(t0).Seconds()
			t0 = time.Now()
			_, err = model.ScoreBucketed(sc, s.Seqs, model.DefaultScoreTokens)
			require.NoError(b, err)
			s.Seconds = time.Since(t0).Seconds()
			b.Logf("%s: %d texts, %d batches, first (compile+run) %.1fs, timed %.2fs = %.3f seq/s",
				s.Name, len(s.Seqs), len(s.Plan), s.First, s.Seconds, float64(len(s.Seqs))/s.Seconds)
		}
	}
	peak := procStatusGiB("VmHWM")
	for _, s := range scenarios {
		b.ReportMetric(float64(len(s.Seqs))/s.Seconds, "seq/s_"+strings.TrimSuffix(s.Name, "64-1024"))
	}
	b.ReportMetric(peak, "peakRSS_GiB")
	if out := os.Getenv("CRITIC_BENCH_SCORE_OUT"); out != "" {
		data, err := json.Marshal(map[string]any{"layers": layers, "pad": spec.PadTokenID, "vocab": spec.Vocab,
			"go_peak_rss_gib": peak, "scenarios": scenarios})
		require.NoError(b, err)
		require.NoError(b, os.WriteFile(out, data, 0o644))
	}
}

// procStatusGiB reads a /proc/self/status field (VmRSS, VmHWM) in GiB; 0 off Linux.
func procStatusGiB(field string) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / (1 << 20)
		}
	}
	return 0
}
