package cpuops

// Transpose sets out to in (dimensions dims) with its axes permuted: out's axis i is
// in's axis perm[i]. Axes of extent 1 are dropped and runs of axes that stay
// neighbours are merged first, so e.g. [B,T,H,D] → [B,H,T,D] copies rows of D.
func Transpose(in []float32, dims, perm []int, out []float32) {
	// The output's axes in order, with in's stride along each.
	strides := rowMajorStrides(dims)
	var axes []strideAxis
	for _, a := range perm {
		if dims[a] == 1 {
			continue
		}
		// Contiguous after the previous output axis: one axis.
		if n := len(axes); n > 0 && axes[n-1].stride == strides[a]*dims[a] {
			axes[n-1] = strideAxis{dim: axes[n-1].dim * dims[a], stride: strides[a]}
			continue
		}
		axes = append(axes, strideAxis{dim: dims[a], stride: strides[a]})
	}
	gather(in, 0, axes, out)
}

// rowMajorStrides are the element strides of each axis of a row-major array.
func rowMajorStrides(dims []int) []int {
	strides := make([]int, len(dims))
	s := 1
	for a := len(dims) - 1; a >= 0; a-- {
		strides[a] = s
		s *= dims[a]
	}
	return strides
}

// strideAxis is one axis of a strided read: its extent and the source's stride along it.
type strideAxis struct{ dim, stride int }

// gather writes, in out's order, the source elements at base + Σ idx·stride over axes
// (out is the axes' extents in row-major order). The innermost axis is a copy when its
// stride is 1, a strided loop otherwise; an innermost transpose of two axes goes in
// blocks so that both sides stay in cache.
func gather(src []float32, base int, axes []strideAxis, out []float32) {
	if len(axes) == 0 {
		out[0] = src[base]
		return
	}
	n := len(axes)
	last := axes[n-1]
	if last.stride != 1 && n >= 2 {
		gatherTransposed(src, base, axes, out)
		return
	}
	outer := axes[:n-1]
	idx := make([]int, len(outer))
	si, oi := base, 0
	for {
		o := out[oi : oi+last.dim]
		if last.stride == 1 {
			copy(o, src[si:si+last.dim])
		} else {
			for i, j := 0, si; i < len(o); i, j = i+1, j+last.stride {
				o[i] = src[j]
			}
		}
		oi += last.dim
		if !advance(outer, idx, &si) {
			return
		}
	}
}

// advance moves idx (over axes) to the next position, innermost first, keeping *off
// at Σ idx·stride; false after the last.
func advance(axes []strideAxis, idx []int, off *int) bool {
	for a := len(axes) - 1; a >= 0; a-- {
		idx[a]++
		*off += axes[a].stride
		if idx[a] < axes[a].dim {
			return true
		}
		*off -= axes[a].stride * axes[a].dim
		idx[a] = 0
	}
	return false
}

const transposeBlock = 16

// gatherTransposed is gather for a strided innermost axis: the two innermost output
// axes (rows r, columns c read at stride cs) are walked in 16 × 16 blocks.
func gatherTransposed(src []float32, base int, axes []strideAxis, out []float32) {
	n := len(axes)
	rows, cols := axes[n-2], axes[n-1]
	outer := axes[:n-2]
	idx := make([]int, len(outer))
	si, oi := base, 0
	for {
		for r0 := 0; r0 < rows.dim; r0 += transposeBlock {
			r1 := min(r0+transposeBlock, rows.dim)
			for c0 := 0; c0 < cols.dim; c0 += transposeBlock {
				c1 := min(c0+transposeBlock, cols.dim)
				for r := r0; r < r1; r++ {
					o := out[oi+r*cols.dim+c0 : oi+r*cols.dim+c1]
					j := si + r*rows.stride + c0*cols.stride
					for i := range o {
						o[i] = src[j]
						j += cols.stride
					}
				}
			}
		}
		oi += rows.dim * cols.dim
		if !advance(outer, idx, &si) {
			return
		}
	}
}

// Slice sets out (dimensions outDims) to in (dimensions dims) from starts, stepping
// by strides along each axis.
func Slice(in []float32, dims, starts, strides, outDims []int, out []float32) {
	inStrides := rowMajorStrides(dims)
	base := 0
	var axes []strideAxis
	for a := range dims {
		base += starts[a] * inStrides[a]
		if outDims[a] == 1 {
			continue
		}
		st := strides[a] * inStrides[a]
		// A full-extent, unit-step axis merges with the one before it.
		if n := len(axes); n > 0 && axes[n-1].stride == st*outDims[a] && strides[a] == 1 && outDims[a] == dims[a] {
			axes[n-1] = strideAxis{dim: axes[n-1].dim * outDims[a], stride: st}
			continue
		}
		axes = append(axes, strideAxis{dim: outDims[a], stride: st})
	}
	gather(in, base, axes, out)
}
