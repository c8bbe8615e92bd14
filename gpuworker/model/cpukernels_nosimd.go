//go:build !(amd64 && goexperiment.simd)

package model

const simdBuild = false

func cpuHasAVX512() bool { return false }
func cpuHasAVX2() bool   { return false }
