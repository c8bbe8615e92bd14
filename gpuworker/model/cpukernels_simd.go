//go:build amd64 && goexperiment.simd

package model

import "simd/archsimd"

const simdBuild = true

func cpuHasAVX512() bool { return archsimd.X86.AVX512() }
func cpuHasAVX2() bool   { return archsimd.X86.AVX2() }

var cpuHasAVX = archsimd.X86.AVX()

// clearAVXUpper executes VZEROUPPER on this OS thread (where the CPU has AVX). compute's
// SIMD kernels leave the upper halves of the vector registers dirty, and on such a
// thread math.Exp (whose FMA path mixes VEX and legacy-SSE instructions) runs ~100×
// slower; host-side loops that call math.Exp in bulk clear them first.
func clearAVXUpper() {
	if cpuHasAVX {
		archsimd.ClearAVXUpperBits()
	}
}
