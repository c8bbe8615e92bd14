package train

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/model"
)

// benchSpec is the tiny config of the train-step benchmark (also built by
// torch_reference.py bench): vocab 1000, hidden 128, 2 layers, 4 q / 2 kv heads of 32,
// MLP 384.
func benchSpec() model.TinySpec {
	return model.TinySpec{Family: model.FamilyQwen3, Hidden: 128, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32,
		MLP: 384, Vocab: 1000, PadTokenID: 0}
}

func randomSeqs(n, length, vocab int) [][]int {
	rng := rand.New(rand.NewPCG(0, 0))
	seqs := make([][]int, n)
	for i := range seqs {
		seqs[i] = make([]int, length)
		for j := range seqs[i] {
			seqs[i][j] = 1 + rng.IntN(vocab-1)
		}
	}
	return seqs
}

// BenchmarkTrainStep times one AdamW step on 4 pairs × 128 tokens (compile excluded).
func BenchmarkTrainStep(b *testing.B) {
	model.SetEngineGC()                // as the worker runs
	backend, err := model.NewBackend() // what a training run uses
	require.NoError(b, err)
	cfg, err := model.NewBaseConfig(benchSpec())
	require.NoError(b, err)
	m, err := model.NewRandom(backend, cfg, 0)
	require.NoError(b, err)
	defer m.Finalize()
	tr, err := newTrainer(m, DefaultAdamW(1e-5))
	require.NoError(b, err)
	seqs := randomSeqs(8, 128, 1000)
	_, _, err = tr.step(seqs) // compile
	require.NoError(b, err)
	b.ResetTimer()
	cpu0 := cpuSeconds()
	for range b.N {
		_, _, err = tr.step(seqs)
		require.NoError(b, err)
	}
	b.ReportMetric(float64(8*128*b.N)/b.Elapsed().Seconds(), "tokens/s")
	// CPU time beside wall time: on a shared machine the wall time also counts the
	// other tenants' turns, the CPU time (user+sys, all threads) much less so.
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
}

// BenchmarkScore06B scores one 1024-token sequence through a Qwen3-0.6B-shaped model
// with random weights and reports sequences/s and peak RSS. Opt-in: CRITIC_BENCH_06B=1
// (it allocates ~2.4 GB of float32 weights). CRITIC_BENCH_06B_LAYERS=n keeps only n of
// the 28 layers, to profile a layer's cost in seconds rather than minutes.
func BenchmarkScore06B(b *testing.B) {
	if os.Getenv("CRITIC_BENCH_06B") == "" {
		b.Skip("set CRITIC_BENCH_06B=1")
	}
	layers := 28
	if v := os.Getenv("CRITIC_BENCH_06B_LAYERS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "CRITIC_BENCH_06B_LAYERS")
		layers = n
	}
	model.SetEngineGC() // as the worker runs
	backend, err := model.NewBackend()
	require.NoError(b, err)
	cfg, err := model.NewBaseConfig(model.TinySpec{Family: model.FamilyQwen3, Hidden: 1024, Layers: layers, Heads: 16,
		KVHeads: 8, HeadDim: 128, MLP: 3072, Vocab: 151936, PadTokenID: 151643})
	require.NoError(b, err)
	t0 := time.Now()
	m, err := model.NewRandom(backend, cfg, 0)
	require.NoError(b, err)
	defer m.Finalize()
	b.Logf("init %.1fs, RSS after init %.2f GiB", time.Since(t0).Seconds(), rssGiB("VmRSS"))
	sc, err := m.NewScorer()
	require.NoError(b, err)
	seqs := randomSeqs(1, 1024, 151936)
	t0 = time.Now()
	_, err = sc.Rewards(seqs) // compile + first run
	require.NoError(b, err)
	b.Logf("first call (compile+run) %.1fs", time.Since(t0).Seconds())
	b.ResetTimer()
	for range b.N {
		_, err = sc.Rewards(seqs)
		require.NoError(b, err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "seq/s")
	b.ReportMetric(rssGiB("VmHWM"), "peakRSS_GiB")
}

// cpuSeconds is this process's user+sys CPU time so far; 0 where getrusage fails.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// rssGiB reads a /proc/self/status field (VmRSS, VmHWM) in GiB; 0 off Linux.
func rssGiB(field string) float64 {
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
