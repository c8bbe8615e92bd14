package model

import (
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

// The Scorer's graph (ForwardNoGrad: no gradient routing, no gradient stops) computes
// the same rewards as the graph training differentiates (Forward), on a batch that
// runs as two chains and has padding; and it leaves noGradGraphs empty once built.
func TestForwardNoGradMatchesForward(t *testing.T) {
	backend, err := NewBackend()
	require.NoError(t, err)
	cfg, err := NewBaseConfig(TinySpec{Family: FamilyQwen3, Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2,
		HeadDim: 16, MLP: 128, Vocab: 97, PadTokenID: 0})
	require.NoError(t, err)
	m, err := NewRandom(backend, cfg, 3)
	require.NoError(t, err)
	defer m.Finalize()
	seqs := make([][]int, 4)
	for i := range seqs {
		seqs[i] = make([]int, 100+50*i)
		for j := range seqs[i] {
			seqs[i][j] = 1 + (i*31+j*7)%96
		}
	}
	b := MakeBatchLen(seqs, m.PadID(), 256)
	run := func(fwd func(c *Config, params []*graph.Node, ids, keyMask, pool *graph.Node) *graph.Node) []float32 {
		n := len(m.Params)
		e, err := graph.NewExec(backend, func(inputs []*graph.Node) *graph.Node {
			return fwd(m.Config, inputs[:n], inputs[n], inputs[n+1], inputs[n+2])
		})
		require.NoError(t, err)
		args := make([]any, 0, n+3)
		for _, p := range m.Params {
			args = append(args, p)
		}
		out, err := e.Exec1(append(args, b.IDs, b.KeyMask, b.Pool)...)
		require.NoError(t, err)
		defer out.FinalizeAll()
		return tensors.MustCopyFlatData[float32](out)
	}
	require.Equal(t, 2, forwardChunks(4, 256))
	want := run((*Config).Forward)
	got := run((*Config).ForwardNoGrad)
	require.InDeltaSlice(t, want, got, 1e-6)
	empty := true
	noGradGraphs.Range(func(_, _ any) bool { empty = false; return false })
	require.True(t, empty, "ForwardNoGrad left its graph marked")
}
