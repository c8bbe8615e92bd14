// Package cpuops holds float32 CPU implementations of the element-wise and
// data-movement ops that compute v0.1.2's pure-Go backend runs element by element
// through index iterators: broadcasting binary ops, Transpose, Slice, ReduceSum and
// the logistic function. Each works on flat row-major slices with their dimensions,
// merges axes that move together, and runs its innermost axis as one contiguous (or
// fixed-stride) loop, so the per-element cost is a load, an operation and a store.
// gpuworker/model installs them as the backend's executors (executors.go); the tests
// compare each with a plain per-element reference.
package cpuops

import "fmt"

// BinaryOp is an element-wise operation of two operands.
type BinaryOp int

// The binary ops Binary runs.
const (
	Add BinaryOp = iota
	Sub
	Mul
	Div
)

func (op BinaryOp) String() string {
	if op >= Add && op <= Div {
		return [...]string{Add: "Add", Sub: "Sub", Mul: "Mul", Div: "Div"}[op]
	}
	return fmt.Sprintf("BinaryOp(%d)", int(op))
}

// Binary sets out = lhs op rhs, where lhs and rhs have outDims' rank and each of
// their dimensions is outDims' or 1 (broadcast). out must not overlap lhs or rhs
// unless it is one of them with outDims' shape.
func Binary(op BinaryOp, lhs []float32, lhsDims []int, rhs []float32, rhsDims []int, out []float32, outDims []int) {
	axes := broadcastAxes(lhsDims, rhsDims, outDims)
	if len(axes) == 0 { // a scalar
		out[0] = apply(op, lhs[0], rhs[0])
		return
	}
	last := axes[len(axes)-1]
	inner := binaryLoop(op, last.lhsStride != 0, last.rhsStride != 0)
	outer := axes[:len(axes)-1]
	idx := make([]int, len(outer))
	var li, ri, oi int
	for {
		inner(out[oi:oi+last.dim], lhs[li:], rhs[ri:])
		oi += last.dim
		// Next outer position (odometer, innermost first).
		a := len(outer) - 1
		for ; a >= 0; a-- {
			idx[a]++
			li += outer[a].lhsStride
			ri += outer[a].rhsStride
			if idx[a] < outer[a].dim {
				break
			}
			li -= outer[a].lhsStride * outer[a].dim
			ri -= outer[a].rhsStride * outer[a].dim
			idx[a] = 0
		}
		if a < 0 {
			return
		}
	}
}

// broadcastAxis is one merged axis of a broadcast: its extent and each operand's
// stride along it (0 where the operand is broadcast).
type broadcastAxis struct {
	dim                  int
	lhsStride, rhsStride int
}

// broadcastAxes drops the axes of extent 1 and merges neighbours that broadcast
// alike, so [B,T,H]·[B,T,1] is two axes (B·T, both strided; H, rhs broadcast).
func broadcastAxes(lhsDims, rhsDims, outDims []int) []broadcastAxis {
	var axes []broadcastAxis
	for a, d := range outDims {
		if d == 1 {
			continue
		}
		l, r := lhsDims[a] == d, rhsDims[a] == d
		if n := len(axes); n > 0 && (axes[n-1].lhsStride != 0) == l && (axes[n-1].rhsStride != 0) == r {
			axes[n-1].dim *= d
			continue
		}
		axes = append(axes, broadcastAxis{dim: d, lhsStride: b2i(l), rhsStride: b2i(r)})
	}
	// Strides: the product of the extents after the axis, for the operands that span them.
	ls, rs := 1, 1
	for i := len(axes) - 1; i >= 0; i-- {
		if axes[i].lhsStride != 0 {
			axes[i].lhsStride = ls
			ls *= axes[i].dim
		}
		if axes[i].rhsStride != 0 {
			axes[i].rhsStride = rs
			rs *= axes[i].dim
		}
	}
	return axes
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func apply(op BinaryOp, a, b float32) float32 {
	switch op {
	case Add:
		return a + b
	case Sub:
		return a - b
	case Mul:
		return a * b
	default:
		return a / b
	}
}

// binaryLoop returns the innermost loop of op for whether lhs and rhs advance along
// it (false: the operand's first element is broadcast).
func binaryLoop(op BinaryOp, lhsVaries, rhsVaries bool) func(o, a, b []float32) {
	switch {
	case lhsVaries && rhsVaries:
		return withAVX(op, loopVV, vectorLoops[op], true, true)
	case lhsVaries:
		return withAVX(op, loopVS, scalarRightLoops[op], true, false)
	case rhsVaries:
		return withAVX(op, loopSV, scalarLeftLoops[op], false, true)
	default:
		return func(o, a, b []float32) {
			v := apply(op, a[0], b[0])
			for i := range o {
				o[i] = v
			}
		}
	}
}

// withAVX runs the loop's first multiple of 16 elements with the AVX loop where the
// CPU has AVX (binary_amd64.s), the rest, or all of it elsewhere, in Go. Both give the
// same bits: each lane is one IEEE single-precision operation either way.
func withAVX(op BinaryOp, avx func(op BinaryOp, o, a, b *float32, n int) int, loop func(o, a, b []float32),
	aVaries, bVaries bool) func(o, a, b []float32) {
	if !useAVX {
		return loop
	}
	return func(o, a, b []float32) {
		if len(o) < 16 {
			loop(o, a, b)
			return
		}
		done := avx(op, &o[0], &a[0], &b[0], len(o))
		if done == len(o) {
			return
		}
		// The tail: an operand that varies moves with o, a broadcast one stays.
		if aVaries {
			a = a[done:]
		}
		if bVaries {
			b = b[done:]
		}
		loop(o[done:], a, b)
	}
}

// useAVX is hasAVX unless a test turns it off to compare the two paths.
var useAVX = hasAVX

var vectorLoops = [...]func(o, a, b []float32){
	Add: func(o, a, b []float32) {
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			o[i] = a[i] + b[i]
		}
	},
	Sub: func(o, a, b []float32) {
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			o[i] = a[i] - b[i]
		}
	},
	Mul: func(o, a, b []float32) {
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			o[i] = a[i] * b[i]
		}
	},
	Div: func(o, a, b []float32) {
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			o[i] = a[i] / b[i]
		}
	},
}

var scalarRightLoops = [...]func(o, a, b []float32){
	Add: func(o, a, b []float32) {
		a, c := a[:len(o)], b[0]
		for i := range o {
			o[i] = a[i] + c
		}
	},
	Sub: func(o, a, b []float32) {
		a, c := a[:len(o)], b[0]
		for i := range o {
			o[i] = a[i] - c
		}
	},
	Mul: func(o, a, b []float32) {
		a, c := a[:len(o)], b[0]
		for i := range o {
			o[i] = a[i] * c
		}
	},
	Div: func(o, a, b []float32) {
		a, c := a[:len(o)], b[0]
		for i := range o {
			o[i] = a[i] / c
		}
	},
}

var scalarLeftLoops = [...]func(o, a, b []float32){
	Add: func(o, a, b []float32) {
		c, b := a[0], b[:len(o)]
		for i := range o {
			o[i] = c + b[i]
		}
	},
	Sub: func(o, a, b []float32) {
		c, b := a[0], b[:len(o)]
		for i := range o {
			o[i] = c - b[i]
		}
	},
	Mul: func(o, a, b []float32) {
		c, b := a[0], b[:len(o)]
		for i := range o {
			o[i] = c * b[i]
		}
	},
	Div: func(o, a, b []float32) {
		c, b := a[0], b[:len(o)]
		for i := range o {
			o[i] = c / b[i]
		}
	},
}
