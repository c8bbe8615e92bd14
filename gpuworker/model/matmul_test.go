package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/matmul"
)

// On an AVX-512F or AVX2 + FMA CPU the pure-Go backend's float32 DotGeneral is
// gpuworker/matmul's kernel (it fails if a compute release moves the registry installMatmul patches),
// and products through the backend are right in both of compute's layouts, for a
// shape routed to our kernel and for one small enough to stay with compute's.
func TestCriticMatmulInstalled(t *testing.T) {
	if !matmul.Available() {
		t.Skip("neither AVX-512F nor AVX2 + FMA on this CPU: compute's kernels run")
	}
	if os.Getenv(MatmulEnv) != "" {
		t.Skipf("%s is set", MatmulEnv)
	}
	backend, err := NewBackend()
	require.NoError(t, err)
	require.Equal(t, criticMatmulPrefix+matmul.Kernel(), MatmulKernel())

	rng := rand.New(rand.NewPCG(5, 6))
	fill := func(dims ...int) (*tensors.Tensor, []float32) { return randomTensor(rng, dims...) }
	for _, c := range []struct {
		name       string
		m, n, k    int
		transposed bool // w is [n,k] (a projection's weight) rather than [k,n]
		ours       bool
	}{
		{"projection", 40, 96, 300, true, true},
		{"non-transposed", 24, 70, 130, false, true},
		{"small", 2, 3, 4, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, xs := fill(c.m, c.k)
			wDims, wContract := []int{c.k, c.n}, 0
			if c.transposed {
				wDims, wContract = []int{c.n, c.k}, 1
			}
			w, ws := fill(wDims...)
			before := criticDotCalls.Load()
			out := MustExecOnce(backend, func(x, w *Node) *Node {
				return DotGeneral(x, []int{1}, nil, w, []int{wContract}, nil)
			}, x, w)
			require.Equal(t, c.ours, criticDotCalls.Load() > before, "routed to gpuworker/matmul")
			got := out.Value().([][]float32)
			for i := range c.m {
				for j := range c.n {
					var want float64
					for p := range c.k {
						wv := ws[p*c.n+j]
						if c.transposed {
							wv = ws[j*c.k+p]
						}
						want += float64(xs[i*c.k+p]) * float64(wv)
					}
					require.InDelta(t, want, got[i][j], 1e-4*math.Sqrt(float64(c.k)), "out[%d][%d]", i, j)
				}
			}
		})
	}
}

// randomTensor is a float32 tensor of standard normal values, with its flat data.
func randomTensor(rng *rand.Rand, dims ...int) (*tensors.Tensor, []float32) {
	flat := make([]float32, shapes.Make(dtypes.Float32, dims...).Size())
	for i := range flat {
		flat[i] = float32(rng.NormFloat64())
	}
	return tensors.FromFlatDataAndDimensions(flat, dims...), flat
}

// A CRITIC_MATMUL naming no kernel fails the backend's construction, naming the
// variable and the value.
func TestBadMatmulEnvFailsBackend(t *testing.T) {
	t.Setenv(MatmulEnv, "avx1024")
	_, err := NewBackend()
	require.ErrorContains(t, err, `CRITIC_MATMUL="avx1024"`)
	require.ErrorContains(t, err, "no matmul kernel")
}

// BenchmarkBackendMatmul times a projection-shaped DotGeneral ([tokens, in] ×
// [out, in]ᵀ) through the pure-Go backend, so the float32 matmuls can be compared in
// one binary: as is (gpuworker/matmul's fastest kernel), CRITIC_MATMUL=avx2-6x16,
// CRITIC_MATMUL=compute (compute's AVX-512 kernel in a GOEXPERIMENT=simd build), and
// CRITIC_MATMUL=compute GOMLX_SIMD_AVX512=false (compute's AVX2 kernel).
func BenchmarkBackendMatmul(b *testing.B) {
	backend, err := NewBackend()
	require.NoError(b, err)
	b.Logf("float32 matmul: %s, CPU kernels: %s", MatmulKernel(), CPUKernels())
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sh := range [][3]int{{384, 1024, 4096}, {4096, 1024, 4096}, {4096, 3072, 1024}} {
		m, k, n := sh[0], sh[1], sh[2]
		x, w := tensors.FromShape(shapes.Make(dtypes.Float32, m, k)), tensors.FromShape(shapes.Make(dtypes.Float32, n, k))
		for _, t := range []*tensors.Tensor{x, w} {
			tensors.MutableFlatData(t, func(flat []float32) {
				for i := range flat {
					flat[i] = float32(rng.NormFloat64())
				}
			})
		}
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			e, err := NewExec(backend, func(x, w *Node) *Node { return DotGeneral(x, []int{1}, nil, w, []int{1}, nil) })
			require.NoError(b, err)
			for i := range b.N + 1 {
				if i == 1 {
					b.ResetTimer() // the first call compiles
				}
				outs, err := e.Exec(x, w)
				require.NoError(b, err)
				outs[0].FinalizeAll()
			}
			b.ReportMetric(float64(2*m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
