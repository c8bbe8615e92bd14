package model_test

import (
	"os"
	"testing"

	"github.com/gomlx/compute"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/model/modeltest"
)

// TestXLAMatchesGo scores the tiny model on the pure-Go backend and on a PJRT plugin
// and compares rewards within 1e-4. Opt-in: CRITIC_XLA_PLUGIN=<GOMLX_BACKEND value
// after "xla:", e.g. /…/jax_plugins/xla_cuda13/xla_cuda_plugin.so,notf32> (run by
// gpuworker/scripts/gpu_check.sh; no plugin can be installed on the CPU machines).
func TestXLAMatchesGo(t *testing.T) {
	plugin := os.Getenv("CRITIC_XLA_PLUGIN")
	if plugin == "" {
		t.Skip("set CRITIC_XLA_PLUGIN to a PJRT plugin path to compare XLA with the pure-Go backend")
	}
	goB, err := model.NewBackendFrom("go")
	require.NoError(t, err)
	xlaB, err := model.NewBackendFrom("xla:" + plugin)
	require.NoError(t, err)
	t.Logf("xla backend: %s; metrics.device=%s", xlaB.Description(), model.DeviceName(xlaB))

	tok := modeltest.ByteTokenizer{Vocab: 64}
	texts := []string{"the agent refunded the order", "no", "a much longer reply that needs more padding than the others"}
	seqs := make([][]int, len(texts))
	for i, s := range texts {
		seqs[i] = model.EncodeForReward(tok, s, 1024)
	}
	rewards := func(backend compute.Backend) []float64 {
		spec := modeltest.Tiny()
		spec.PadTokenID = 0
		cfg, err := model.NewBaseConfig(spec)
		require.NoError(t, err)
		cfg.InitializerRange = 0.2 // rewards far from zero
		m, err := model.NewRandom(backend, cfg, 42)
		require.NoError(t, err)
		defer m.Finalize()
		sc, err := m.NewScorer()
		require.NoError(t, err)
		r, err := sc.Rewards(seqs)
		require.NoError(t, err)
		return r
	}
	want, got := rewards(goB), rewards(xlaB)
	t.Logf("go  rewards %v", want)
	t.Logf("xla rewards %v", got)
	require.InDeltaSlice(t, want, got, 1e-4)
	require.Greater(t, abs(want[0]-want[1]), 1e-3, "rewards must not be degenerate")
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
