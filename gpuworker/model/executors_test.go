package model

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

// The pure-Go backend runs broadcast Mul/Add/Sub/Div, Transpose, Slice, ReduceSum and
// Logistic with gpuworker/cpuops (it fails if a compute release moves the executor
// table or changes the types installExecutors mirrors), and a graph using each gives
// what the definitions give. One graph per op, so each result is checked on its own.
func TestCriticExecutorsInstalled(t *testing.T) {
	if os.Getenv(OpsEnv) != "" {
		t.Skipf("%s is set", OpsEnv)
	}
	backend, err := NewBackend()
	require.NoError(t, err)
	require.NoError(t, installExecutors())
	require.Contains(t, ExecutorsStatus(), "critic (8 ops)")

	rng := rand.New(rand.NewPCG(11, 12))
	x, xs := randomTensor(rng, 3, 4, 5) // [3,4,5]
	r, rs := randomTensor(rng, 3, 4, 1) // broadcast along the last axis
	run := func(f func(x, r *Node) *Node) []float32 {
		t.Helper()
		before := criticOpCalls.Load()
		out := MustExecOnce(backend, f, x, r)
		require.Greater(t, criticOpCalls.Load(), before, "ran on gpuworker/cpuops")
		return tensors.MustCopyFlatData[float32](out)
	}
	at := func(i, j, k int) float32 { return xs[(i*4+j)*5+k] }

	got := run(func(x, r *Node) *Node { return Div(x, r) })
	for i := range 3 {
		for j := range 4 {
			for k := range 5 {
				require.Equal(t, at(i, j, k)/rs[i*4+j], got[(i*4+j)*5+k], "Div at %d,%d,%d", i, j, k)
			}
		}
	}
	got = run(func(x, _ *Node) *Node { return TransposeAllDims(x, 2, 0, 1) }) // [5,3,4]
	for i := range 3 {
		for j := range 4 {
			for k := range 5 {
				require.Equal(t, at(i, j, k), got[(k*3+i)*4+j], "Transpose at %d,%d,%d", i, j, k)
			}
		}
	}
	got = run(func(x, _ *Node) *Node { return Slice(x, AxisRange(1, 3), AxisRange(), AxisRange(1, 5).Stride(2)) }) // [2,4,2]
	for i := range 2 {
		for j := range 4 {
			for k := range 2 {
				require.Equal(t, at(i+1, j, 1+2*k), got[(i*4+j)*2+k], "Slice at %d,%d,%d", i, j, k)
			}
		}
	}
	got = run(func(x, _ *Node) *Node { return ReduceSum(x, 0, 2) }) // [4]
	for j := range 4 {
		var want float64
		for i := range 3 {
			for k := range 5 {
				want += float64(at(i, j, k))
			}
		}
		require.InDelta(t, want, got[j], 1e-5, "ReduceSum at %d", j)
	}
	got = run(func(x, _ *Node) *Node { return Logistic(MulScalar(x, 30)) })
	for i, v := range xs {
		want := 1 / (1 + math.Exp(-float64(float32(30*float64(v))))) // of the float32 product the graph feeds it
		require.InDelta(t, want, got[i], 4e-7*want+1e-30, "Logistic at %d", i)
	}
}

// A CRITIC_OPS naming neither "critic" nor "compute" fails the backend's construction.
func TestBadOpsEnvFailsBackend(t *testing.T) {
	t.Setenv(OpsEnv, "fast")
	_, err := NewBackend()
	require.ErrorContains(t, err, `CRITIC_OPS="fast"`)
}

// go.mod pins the compute release the executor mirrors were read from: bumping it
// fails here, so the mirrors (gbNode, gbBuffer, nodeExecutor, gbSliceNode) are
// re-read against the new source before the version check lets them run.
func TestComputeVersionPinned(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	require.Contains(t, string(mod), "\t"+computeModule+" "+computeVersion+"\n")
}
