package matmul

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// goroutines is a fanOut on plain goroutines.
func goroutines(n int) func(func()) {
	return func(task func()) {
		var wg sync.WaitGroup
		for range n {
			wg.Go(task)
		}
		wg.Wait()
	}
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}

// reference is the float64 product of the same operands.
func reference(lhs, rhs []float32, batch, m, n, k int, tr bool) []float64 {
	out := make([]float64, batch*m*n)
	for b := range batch {
		for i := range m {
			for j := range n {
				var sum float64
				for p := range k {
					r := rhs[b*k*n+p*n+j]
					if tr {
						r = rhs[b*k*n+j*k+p]
					}
					sum += float64(lhs[b*m*k+i*k+p]) * float64(r)
				}
				out[b*m*n+i*n+j] = sum
			}
		}
	}
	return out
}

// For every kernel this CPU runs, every shape class — exact tiles, edge rows and
// columns, k past one panel and not a multiple of it, more than one row and column
// panel, batches, a single row — in both layouts matches the float64 product to
// float32 rounding, and the same with 1 or 3 workers bit for bit.
func TestFloat32MatchesReference(t *testing.T) {
	ran := 0
	for _, tl := range tiles {
		if !tl.ok {
			t.Logf("%s: not on this CPU", tl.name)
			continue
		}
		ran++
		t.Run(tl.name, func(t *testing.T) { testTileMatchesReference(t, tl) })
	}
	if ran == 0 {
		t.Skip("no kernel runs on this CPU")
	}
}

func testTileMatchesReference(t *testing.T, tl tile) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range [][4]int{{1, 8, 32, 16}, {1, 1, 1, 1}, {1, 13, 45, 7}, {2, 8, 32, 300}, {3, 100, 600, 257},
		{1, 200, 70, 520}, {4, 9, 33, 0}, {1, 3, 1100, 64}, {5, 64, 64, 128}} {
		batch, m, n, k := c[0], c[1], c[2], c[3]
		for _, tr := range []bool{false, true} {
			t.Run(fmt.Sprintf("%dx%dx%dx%d/transposed=%v", batch, m, n, k, tr), func(t *testing.T) {
				lhs, rhs := randSlice(rng, batch*m*k), randSlice(rng, batch*k*n)
				want := reference(lhs, rhs, batch, m, n, k, tr)
				out1 := randSlice(rng, batch*m*n) // garbage in the output must not leak through
				float32With(tl, lhs, rhs, out1, batch, m, n, k, tr, 1, goroutines(1))
				out3 := make([]float32, batch*m*n)
				float32With(tl, lhs, rhs, out3, batch, m, n, k, tr, 3, goroutines(3))
				for i, w := range want {
					tol := 1e-5 * math.Max(1, math.Sqrt(float64(k))) * 4
					if d := math.Abs(float64(out1[i]) - w); d > tol {
						t.Fatalf("out[%d] = %v, want %v (diff %g)", i, out1[i], w, d)
					}
					if out1[i] != out3[i] {
						t.Fatalf("out[%d]: %v with 1 worker, %v with 3", i, out1[i], out3[i])
					}
				}
			})
		}
	}
}

// BenchmarkFloat32 runs each kernel this CPU has on the projections of a
// Qwen3-0.6B-shaped layer ([tokens, in] × [out, in]ᵀ).
func BenchmarkFloat32(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := runtime.GOMAXPROCS(0)
	for _, tl := range tiles {
		if !tl.ok {
			continue
		}
		for _, sh := range [][3]int{{384, 1024, 4096}, {4096, 1024, 4096}, {4096, 3072, 1024}, {768, 1024, 6144}} {
			m, k, n := sh[0], sh[1], sh[2]
			lhs, rhs, out := randSlice(rng, m*k), randSlice(rng, n*k), make([]float32, m*n)
			b.Run(fmt.Sprintf("%s/%dx%dx%d", tl.name, m, k, n), func(b *testing.B) {
				for range b.N {
					float32With(tl, lhs, rhs, out, 1, m, n, k, true, w, goroutines(w))
				}
				b.ReportMetric(float64(2*m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
