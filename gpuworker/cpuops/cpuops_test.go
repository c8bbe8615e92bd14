package cpuops

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Each op against a per-element reference written from the definition (row-major
// index arithmetic, float64 sums), over shapes that exercise merging, broadcasting
// on every side, axes of extent 1 and edge blocks.

func size(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

func random(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// unravel is the multi-index of flat position i in dims.
func unravel(i int, dims []int) []int {
	idx := make([]int, len(dims))
	for a := len(dims) - 1; a >= 0; a-- {
		idx[a] = i % dims[a]
		i /= dims[a]
	}
	return idx
}

func ravel(idx, dims []int) int {
	i := 0
	for a, d := range dims {
		i = i*d + idx[a]
	}
	return i
}

// With and without the AVX loops (where the CPU has them): the same bits.
func TestBinaryBroadcasts(t *testing.T) {
	t.Run("avx", testBinaryBroadcasts)
	if useAVX {
		useAVX = false
		defer func() { useAVX = true }()
		t.Run("go", testBinaryBroadcasts)
	}
}

func testBinaryBroadcasts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ lhs, rhs, out []int }{
		{[]int{5, 7}, []int{5, 7}, []int{5, 7}},
		{[]int{2, 3, 17}, []int{2, 3, 1}, []int{2, 3, 17}},
		{[]int{2, 3, 17}, []int{1, 1, 17}, []int{2, 3, 17}},
		{[]int{1, 3, 1}, []int{4, 3, 5}, []int{4, 3, 5}},
		{[]int{4, 1, 5}, []int{1, 3, 1}, []int{4, 3, 5}},
		{[]int{1, 1}, []int{6, 2}, []int{6, 2}},
		{[]int{1}, []int{1}, []int{1}},
		{[]int{3, 1, 2, 1}, []int{3, 4, 2, 6}, []int{3, 4, 2, 6}},
		{[]int{3, 70}, []int{3, 70}, []int{3, 70}}, // AVX loop and tail, each side
		{[]int{3, 70}, []int{3, 1}, []int{3, 70}},
		{[]int{3, 1}, []int{3, 70}, []int{3, 70}},
		{[]int{2, 64}, []int{1, 64}, []int{2, 64}}, // no tail
	} {
		for _, op := range []BinaryOp{Add, Sub, Mul, Div} {
			lhs, rhs := random(rng, size(c.lhs)), random(rng, size(c.rhs))
			got := make([]float32, size(c.out))
			Binary(op, lhs, c.lhs, rhs, c.rhs, got, c.out)
			for i := range got {
				idx := unravel(i, c.out)
				li, ri := make([]int, len(idx)), make([]int, len(idx))
				for a := range idx {
					li[a] = idx[a] % c.lhs[a]
					ri[a] = idx[a] % c.rhs[a]
				}
				want := apply(op, lhs[ravel(li, c.lhs)], rhs[ravel(ri, c.rhs)])
				if got[i] != want {
					t.Fatalf("%v %v·%v at %v: got %v, want %v", op, c.lhs, c.rhs, idx, got[i], want)
				}
			}
		}
	}
}

func TestBinaryInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a, b := random(rng, 24), random(rng, 4)
	want := make([]float32, 24)
	Binary(Mul, a, []int{6, 4}, b, []int{1, 4}, want, []int{6, 4})
	Binary(Mul, a, []int{6, 4}, b, []int{1, 4}, a, []int{6, 4})
	if !slices.Equal(a, want) {
		t.Fatalf("in place: %v, want %v", a, want)
	}
}

func TestTransposePermutations(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct{ dims, perm []int }{
		{[]int{3, 5}, []int{1, 0}},
		{[]int{40, 37}, []int{1, 0}},
		{[]int{2, 7, 3, 4}, []int{0, 2, 1, 3}},
		{[]int{2, 3, 5, 2, 4}, []int{0, 2, 3, 1, 4}},
		{[]int{2, 3, 19, 18}, []int{0, 1, 3, 2}},
		{[]int{2, 1, 5, 3}, []int{2, 1, 3, 0}},
		{[]int{4, 6}, []int{0, 1}},
		{[]int{2, 3, 4, 5, 6}, []int{0, 3, 1, 2, 4}},
		{[]int{1, 1}, []int{1, 0}},
	} {
		in := random(rng, size(c.dims))
		outDims := make([]int, len(c.dims))
		for i, a := range c.perm {
			outDims[i] = c.dims[a]
		}
		got := make([]float32, len(in))
		Transpose(in, c.dims, c.perm, got)
		for i := range got {
			oidx := unravel(i, outDims)
			iidx := make([]int, len(oidx))
			for o, a := range c.perm {
				iidx[a] = oidx[o]
			}
			if want := in[ravel(iidx, c.dims)]; got[i] != want {
				t.Fatalf("%v by %v at %v: got %v, want %v", c.dims, c.perm, oidx, got[i], want)
			}
		}
	}
}

func TestSliceStartsAndStrides(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ dims, starts, limits, strides []int }{
		{[]int{10}, []int{2}, []int{9}, []int{1}},
		{[]int{4, 6}, []int{0, 1}, []int{4, 5}, []int{1, 1}},
		{[]int{4, 6}, []int{1, 0}, []int{3, 6}, []int{1, 1}},
		{[]int{3, 4, 8}, []int{0, 0, 4}, []int{3, 4, 8}, []int{1, 1, 1}},
		{[]int{5, 9}, []int{1, 0}, []int{5, 9}, []int{2, 3}},
		{[]int{2, 1, 6}, []int{0, 0, 0}, []int{1, 1, 6}, []int{1, 1, 1}},
		{[]int{2, 3, 4}, []int{1, 1, 1}, []int{2, 2, 2}, []int{1, 1, 1}},
	} {
		in := random(rng, size(c.dims))
		outDims := make([]int, len(c.dims))
		for a := range c.dims {
			outDims[a] = (c.limits[a] - c.starts[a] + c.strides[a] - 1) / c.strides[a]
		}
		got := make([]float32, size(outDims))
		Slice(in, c.dims, c.starts, c.strides, outDims, got)
		for i := range got {
			idx := unravel(i, outDims)
			for a := range idx {
				idx[a] = c.starts[a] + idx[a]*c.strides[a]
			}
			if want := in[ravel(idx, c.dims)]; got[i] != want {
				t.Fatalf("%v from %v step %v at %v: got %v, want %v", c.dims, c.starts, c.strides, idx, got[i], want)
			}
		}
	}
}

func TestReduceSumAxes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct{ dims, axes []int }{
		{[]int{6, 33}, []int{1}},
		{[]int{33, 6}, []int{0}},
		{[]int{2, 3, 4, 5}, []int{1, 3}},
		{[]int{2, 3, 4, 5}, []int{0, 1}},
		{[]int{2, 3, 4, 5}, []int{0, 1, 2, 3}},
		{[]int{4, 1, 5}, []int{1}},
		{[]int{7}, []int{0}},
		{[]int{3, 4}, nil},
	} {
		in := random(rng, size(c.dims))
		var outDims []int
		for a, d := range c.dims {
			if !slices.Contains(c.axes, a) {
				outDims = append(outDims, d)
			}
		}
		want := make([]float64, size(outDims))
		for i, v := range in {
			idx := unravel(i, c.dims)
			var kept []int
			for a := range idx {
				if !slices.Contains(c.axes, a) {
					kept = append(kept, idx[a])
				}
			}
			want[ravel(kept, outDims)] += float64(v)
		}
		got := make([]float32, len(want))
		for i := range got {
			got[i] = 1e9 // not zeroed, as a pooled buffer is not
		}
		ReduceSum(in, c.dims, c.axes, got)
		for i := range got {
			if math.Abs(float64(got[i])-want[i]) > 1e-5*(1+math.Abs(want[i])) {
				t.Fatalf("%v over %v at %d: got %v, want %v", c.dims, c.axes, i, got[i], want[i])
			}
		}
	}
}

func TestLogisticMatchesFloat64(t *testing.T) {
	var worst float64
	for i := -200000; i <= 200000; i++ {
		x := float32(i) * 1e-3 // −200 … 200
		got := make([]float32, 1)
		Logistic([]float32{x}, got)
		want := 1 / (1 + math.Exp(-float64(x)))
		if e := math.Abs(float64(got[0])-want) / math.Max(want, 1e-30); want > 1e-37 && e > worst {
			worst = e
		}
		if want <= 1e-37 && got[0] > 1e-37 {
			t.Fatalf("σ(%v) = %v, want %v", x, got[0], want)
		}
	}
	if worst > 4e-7 {
		t.Fatalf("worst relative error %.3g, want < 4e-7", worst)
	}
}
