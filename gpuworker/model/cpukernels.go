package model

import (
	"runtime"
	"strings"

	"github.com/gomlx/compute/support/envutil"
)

// CPU matmul kernels of the pure-Go backend (github.com/gomlx/compute v0.1.2), as
// CPUKernels reports them.
const (
	KernelsAVX512   = "avx512"   // AVX-512 kernels (GOEXPERIMENT=simd build, CPU with AVX-512 F/CD/BW/DQ/VL)
	KernelsAVX2     = "avx2"     // AVX2 kernels (GOEXPERIMENT=simd build, CPU with AVX2 but not AVX-512)
	KernelsPortable = "portable" // scalar Go kernels: no SIMD build, non-amd64, or a CPU without AVX2
)

// matmulEnabledEnv is compute's own switch for its matmul package
// (internal/gobackend/dot/matmul.EnabledEnv, not importable).
const matmulEnabledEnv = "GOMLX_DOT_MATMUL"

// CPUKernels says which matmul kernels the pure-Go backend runs in this process.
// compute registers its SIMD kernels in init functions compiled only with
// GOEXPERIMENT=simd on amd64, and only when the CPU reports the instructions
// (archsimd.X86.AVX512/AVX2) and GOMLX_SIMD_AVX512 / GOMLX_SIMD_AVX2 do not say
// false; otherwise its portable scalar kernels run. This mirrors those checks, so
// the worker can say at start-up what it got and warn when a build left the fast
// path out (the scalar kernels are 2–4× slower here; see BENCH_TRAIN.md).
func CPUKernels() string {
	if !simdBuild || runtime.GOARCH != "amd64" || !envBool(matmulEnabledEnv) {
		return KernelsPortable
	}
	switch {
	case envBool(envutil.SIMD_AVX512_Env) && cpuHasAVX512():
		return KernelsAVX512
	case envBool(envutil.SIMD_AVX2_Env) && cpuHasAVX2():
		return KernelsAVX2
	}
	return KernelsPortable
}

// SIMDBuild reports whether this binary was built with GOEXPERIMENT=simd (which
// `make build` does on amd64).
func SIMDBuild() bool { return simdBuild }

// envBool reads a boolean knob the way compute does (unset = true). compute panics
// at init on a malformed value in a SIMD build, so an error here cannot change the
// answer.
func envBool(name string) bool {
	v, err := envutil.ReadBool(name, true)
	return err != nil || v
}

// CPUKernelsAdvice is the start-up warning for an amd64 binary built without
// GOEXPERIMENT=simd (plain `go build`), which never has compute's SIMD kernels
// whatever the CPU; "" otherwise. Where gpuworker/matmul's kernels run (MatmulKernel)
// they carry the large matmuls in any build, and only the small ones left to compute
// are slower (the tiny train step ~8 %, BENCH_TRAIN.md eighth pass).
func CPUKernelsAdvice() string {
	if simdBuild || runtime.GOARCH != "amd64" {
		return ""
	}
	fix := "; build with `make build` or `GOEXPERIMENT=simd go build ./cmd/critic` (Go >= 1.26)"
	if strings.HasPrefix(MatmulKernel(), criticMatmulPrefix) {
		return "built without GOEXPERIMENT=simd: matmuls too small for " + MatmulKernel() +
			" use GoMLX's portable scalar code" + fix
	}
	return "built without GOEXPERIMENT=simd: CPU scoring and training use GoMLX's portable scalar matmul " +
		"(2-4x slower than its AVX-512/AVX2 kernels)" + fix
}
