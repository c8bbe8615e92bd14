// Package matmul multiplies float32 matrices on the CPU with micro-kernels written in
// assembly (AVX-512, or AVX2 + FMA): the reward model's projections and attention
// products, which are most of scoring's and training's time on CPU.
//
// Why our own kernel: compute v0.1.2's pure-Go AVX-512 matmul (a 4×32 tile written
// with simd/archsimd) runs at about half OpenBLAS's rate on the same cores — the Go
// compiler keeps its accumulators moving between registers and spills the loop's
// pointers (gpuworker/scripts/BENCH_TRAIN.md, seventh pass). The kernels here keep
// an 8×32 tile in 16 of AVX-512's 32 ZMM registers, or a 6×16 tile in 12 of AVX2's
// 16 YMM registers, inside the blocked, packed loop nest of BLIS/GotoBLAS: B in
// panels of kc × nc (L2), A in panels of mc × kc, the micro-kernel over mr × nr
// tiles. Each output tile is computed by one task in a fixed order, so
// results do not depend on the number of workers or their scheduling.
package matmul

import (
	"fmt"
	"sync"
	"sync/atomic"
)

const (
	kc = 256 // contracting panel
	mc = 96  // rows of an A panel (a multiple of every tile's mr)
	nc = 512 // columns of a B panel (a multiple of every tile's nr)

	maxTile = 8 * 32 // the largest mr × nr
)

// tile is a micro-kernel and the mr × nr output tile it computes:
// c[r*ldc+j] (+)= Σ_p a[p*mr+r]·b[p*nr+j] for a packed [k][mr] panel a and a packed
// [k][nr] panel b, added to c when add != 0, else written.
type tile struct {
	name   string
	mr, nr int
	kernel func(a, b, c *float32, k, ldc, add int)
	ok     bool // this CPU runs it
}

// active is the tile Float32 uses: the fastest this CPU runs (see Use).
var active = fastest()

func fastest() tile {
	for _, t := range tiles {
		if t.ok {
			return t
		}
	}
	return tile{}
}

// Available reports whether this CPU runs one of the kernels (AVX-512F, or AVX2 and
// FMA, on amd64). Where it does not, callers keep their own matmul.
func Available() bool { return active.ok }

// Kernel names the kernel Float32 runs ("avx512-8x32", "avx2-6x16"), "" when none.
func Kernel() string { return active.name }

// Use makes Float32 run the named kernel ("avx512-8x32", "avx2-6x16"), which this CPU
// must support; "" picks the fastest again. For comparisons: call it before any
// Float32 call is in flight.
func Use(name string) error {
	t, err := lookup(name)
	if err == nil {
		active = t
	}
	return err
}

// Check reports whether Use(name) would succeed, without changing the kernel.
func Check(name string) error {
	_, err := lookup(name)
	return err
}

func lookup(name string) (tile, error) {
	if name == "" {
		return fastest(), nil
	}
	for _, t := range tiles {
		if t.name == name {
			if !t.ok {
				return tile{}, fmt.Errorf("matmul kernel %s: this CPU lacks its instructions", name)
			}
			return t, nil
		}
	}
	return tile{}, fmt.Errorf("no matmul kernel %q (have avx512-8x32, avx2-6x16 on amd64)", name)
}

// Float32 computes, for each of batch matrices, out = lhs · rhs where lhs is [m,k]
// row-major, rhs is [k,n] or, with rhsTransposed, [n,k], and out is [m,n]; every
// slice holds batch matrices back to back. fanOut runs the work: it calls task on as
// many goroutines as it likes and returns once all of them have returned (each task
// takes work until none is left); workers is how many it will use at most, which
// decides how finely the output is split. Panics unless Available.
func Float32(lhs, rhs, out []float32, batch, m, n, k int, rhsTransposed bool, workers int, fanOut func(task func())) {
	float32With(active, lhs, rhs, out, batch, m, n, k, rhsTransposed, workers, fanOut)
}

func float32With(t tile, lhs, rhs, out []float32, batch, m, n, k int, rhsTransposed bool, workers int, fanOut func(task func())) {
	if !t.ok {
		panic("matmul: no kernel for this CPU (Available() is false)")
	}
	if batch*m*n == 0 {
		return
	}
	if k == 0 {
		clear(out[:batch*m*n])
		return
	}
	jBlocks := ceilDiv(n, nc)
	base := batch * jBlocks
	iSplits := 1
	if base < 2*workers { // too few column blocks to share: split the rows too
		iSplits = min(ceilDiv(2*workers, base), ceilDiv(m, t.mr))
	}
	iStep := ceilDiv(ceilDiv(m, iSplits), t.mr) * t.mr
	iSplits = ceilDiv(m, iStep)
	perBatch := jBlocks * iSplits
	total := batch * perBatch
	var next atomic.Int64
	fanOut(func() {
		s := scratchPool.Get().(*scratch)
		defer scratchPool.Put(s)
		for {
			it := int(next.Add(1) - 1)
			if it >= total {
				return
			}
			bi, r := it/perBatch, it%perBatch
			j0, i0 := r/iSplits*nc, r%iSplits*iStep
			s.block(t, lhs[bi*m*k:(bi+1)*m*k], rhs[bi*k*n:(bi+1)*k*n], out[bi*m*n:(bi+1)*m*n],
				n, k, i0, min(i0+iStep, m), j0, min(j0+nc, n), rhsTransposed)
		}
	})
}

// scratch is one task's packing buffers, pooled across calls (a forward pass makes
// hundreds of matmul calls).
type scratch struct {
	a, b []float32
	tile [maxTile]float32
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{a: make([]float32, mc*kc), b: make([]float32, kc*nc)}
}}

// block computes out[i0:i1, j0:j1] of one matrix.
func (s *scratch) block(t tile, a, b, c []float32, n, k, i0, i1, j0, j1 int, rhsTransposed bool) {
	mr, nr := t.mr, t.nr
	for p0 := 0; p0 < k; p0 += kc {
		pk := min(kc, k-p0)
		add := 0
		if p0 > 0 {
			add = 1
		}
		if rhsTransposed {
			packBTransposed(s.b, b, nr, k, p0, pk, j0, j1)
		} else {
			packB(s.b, b, nr, n, p0, pk, j0, j1)
		}
		for ic := i0; ic < i1; ic += mc {
			ih := min(mc, i1-ic)
			packA(s.a, a, mr, k, p0, pk, ic, ih)
			for jr := j0; jr < j1; jr += nr {
				bp := &s.b[(jr-j0)/nr*pk*nr]
				jw := min(nr, j1-jr)
				for ir := 0; ir < ih; ir += mr {
					ap := &s.a[ir/mr*pk*mr]
					iw := min(mr, ih-ir)
					if iw == mr && jw == nr {
						t.kernel(ap, bp, &c[(ic+ir)*n+jr], pk, n, add)
						continue
					}
					// Edge tile: computed whole into the scratch tile (the panels are
					// zero-padded), then its valid part moved into c.
					t.kernel(ap, bp, &s.tile[0], pk, nr, 0)
					for r := range iw {
						dst, src := c[(ic+ir+r)*n+jr:][:jw], s.tile[r*nr:][:jw]
						if add == 0 {
							copy(dst, src)
							continue
						}
						for j, v := range src {
							dst[j] += v
						}
					}
				}
			}
		}
	}
}

// packA writes rows ic..ic+ih of a [·,k] matrix, columns p0..p0+pk, as panels of mr
// rows, each [pk][mr] (rows past ih zero). A full panel is written in order, reading
// its mr rows side by side.
func packA(dst, a []float32, mr, k, p0, pk, ic, ih int) {
	var rows [8][]float32
	for ir := 0; ir < ih; ir += mr {
		panel := dst[ir/mr*pk*mr:][:pk*mr]
		if ir+mr > ih {
			interleave(panel, a, mr, k, p0, pk, ic+ir, ih-ir)
			continue
		}
		for r := range mr {
			rows[r] = a[(ic+ir+r)*k+p0:][:pk]
		}
		if mr == 8 {
			r0, r1, r2, r3, r4, r5, r6, r7 := rows[0], rows[1], rows[2], rows[3], rows[4], rows[5], rows[6], rows[7]
			for p := range pk {
				out := panel[p*8:][:8]
				out[0], out[1], out[2], out[3] = r0[p], r1[p], r2[p], r3[p]
				out[4], out[5], out[6], out[7] = r4[p], r5[p], r6[p], r7[p]
			}
			continue
		}
		for p := range pk {
			out := panel[p*mr:][:mr]
			for r := range out {
				out[r] = rows[r][p]
			}
		}
	}
}

// interleave writes count rows of a [·,k] matrix, from row first, columns p0..p0+pk,
// as the w columns of a [pk][w] panel, columns past count zero: an A panel's edge, or
// a B panel from a transposed B.
func interleave(panel, src []float32, w, k, p0, pk, first, count int) {
	for r := range w {
		if r >= count {
			for p := range pk {
				panel[p*w+r] = 0
			}
			continue
		}
		for p, v := range src[(first+r)*k+p0:][:pk] {
			panel[p*w+r] = v
		}
	}
}

// packB writes rows p0..p0+pk, columns j0..j1 of a [k,n] matrix as panels of nr
// columns, each [pk][nr] (columns past j1 zero).
func packB(dst, b []float32, nr, n, p0, pk, j0, j1 int) {
	for jr := j0; jr < j1; jr += nr {
		panel := dst[(jr-j0)/nr*pk*nr:][:pk*nr]
		jw := min(nr, j1-jr)
		for p := range pk {
			row := panel[p*nr:][:nr]
			copy(row, b[(p0+p)*n+jr:][:jw])
			clear(row[jw:])
		}
	}
}

// packBTransposed is packB for b stored [n,k] (out = a · bᵀ).
func packBTransposed(dst, b []float32, nr, k, p0, pk, j0, j1 int) {
	for jr := j0; jr < j1; jr += nr {
		interleave(dst[(jr-j0)/nr*pk*nr:][:pk*nr], b, nr, k, p0, pk, jr, min(nr, j1-jr))
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
