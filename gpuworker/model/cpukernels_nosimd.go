//go:build !(amd64 && goexperiment.simd)

package model

const simdBuild = false

func cpuHasAVX512() bool { return false }
func cpuHasAVX2() bool   { return false }

// clearAVXUpper is a no-op: without GOEXPERIMENT=simd nothing of ours or compute's
// leaves the vector registers' upper halves dirty (the runtime's AVX copies clear them).
func clearAVXUpper() {}
