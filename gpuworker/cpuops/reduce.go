package cpuops

import "math"

// ReduceSum sets out to the sum of in (dimensions dims) over the given axes; out has
// the kept axes in order. Neighbouring axes that are both kept or both reduced are
// merged, so the common cases are one loop each: summing rows ([N,H] over H) or
// accumulating rows into one ([N,H] over N).
func ReduceSum(in []float32, dims, axes []int, out []float32) {
	reduced := make([]bool, len(dims))
	for _, a := range axes {
		reduced[a] = true
	}
	// Groups of merged axes, outermost first, with their stride in out (0 if reduced).
	type group struct {
		dim, outStride int
		reduced        bool
	}
	var groups []group
	for a, d := range dims {
		if d == 1 {
			continue
		}
		if n := len(groups); n > 0 && groups[n-1].reduced == reduced[a] {
			groups[n-1].dim *= d
			continue
		}
		groups = append(groups, group{dim: d, reduced: reduced[a]})
	}
	s := 1
	for i := len(groups) - 1; i >= 0; i-- {
		if !groups[i].reduced {
			groups[i].outStride = s
			s *= groups[i].dim
		}
	}
	clear(out)
	if len(groups) == 0 {
		out[0] = in[0]
		return
	}
	last := groups[len(groups)-1]
	outer := make([]strideAxis, len(groups)-1)
	for i, g := range groups[:len(groups)-1] {
		outer[i] = strideAxis{dim: g.dim, stride: g.outStride}
	}
	idx := make([]int, len(outer))
	oi := 0
	for ii := 0; ii < len(in); ii += last.dim {
		row := in[ii : ii+last.dim]
		if last.reduced {
			out[oi] += sum(row)
		} else {
			o := out[oi : oi+last.dim]
			for i, v := range row {
				o[i] += v
			}
		}
		advance(outer, idx, &oi)
	}
}

// sum adds x in four interleaved partial sums (a dependency chain per lane).
func sum(x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i]
		s1 += x[i+1]
		s2 += x[i+2]
		s3 += x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Logistic sets out[i] = 1/(1+e^−in[i]), through exp32 of −|x| so nothing
// overflows. Why not math.Exp: compute v0.1.2 leaves the upper halves of the vector
// registers dirty (no VZEROUPPER after its AVX code) and math.Exp's FMA path mixes in
// legacy-SSE instructions, which costs a state transition per call on many x86 CPUs
// (see gpuworker/model's silu).
func Logistic(in, out []float32) {
	out = out[:len(in)]
	for i, x := range in {
		e := exp32(-abs32(x))
		if x >= 0 {
			out[i] = 1 / (1 + e)
		} else {
			out[i] = e / (1 + e)
		}
	}
}

func abs32(x float32) float32 {
	return math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
}

// exp32 is e^x for x ≤ 0 in float32 (relative error below 2e-7): x = n·ln2 + r with
// |r| ≤ ln2/2, e^r by Cephes' expf polynomial, 2^n by the exponent bits. Below −87
// (e^x < 2^−125) it returns 0: no subnormals.
func exp32(x float32) float32 {
	if x < -87 {
		return 0
	}
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	n := float32(int32(x*log2e - 0.5)) // round half away from zero, x ≤ 0
	r := x - n*c1 - n*c2
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}
