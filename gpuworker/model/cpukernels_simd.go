//go:build amd64 && goexperiment.simd

package model

import "simd/archsimd"

const simdBuild = true

func cpuHasAVX512() bool { return archsimd.X86.AVX512() }
func cpuHasAVX2() bool   { return archsimd.X86.AVX2() }
