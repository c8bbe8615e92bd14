package model

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// CPUKernels follows compute's own switches: GOMLX_SIMD_AVX512=false falls back to
// AVX2 where the CPU has it, both false (or GOMLX_DOT_MATMUL=false) to the portable
// kernels; a build without GOEXPERIMENT=simd is always portable.
func TestCPUKernelsFollowsComputeSwitches(t *testing.T) {
	if !SIMDBuild() || runtime.GOARCH != "amd64" {
		require.Equal(t, KernelsPortable, CPUKernels())
		if runtime.GOARCH == "amd64" {
			require.Contains(t, CPUKernelsAdvice(), "GOEXPERIMENT=simd")
		}
		t.Setenv("GOMLX_SIMD_AVX512", "true")
		require.Equal(t, KernelsPortable, CPUKernels())
		return
	}
	require.Empty(t, CPUKernelsAdvice())
	switch {
	case cpuHasAVX512():
		require.Equal(t, KernelsAVX512, CPUKernels())
	case cpuHasAVX2():
		require.Equal(t, KernelsAVX2, CPUKernels())
	default:
		require.Equal(t, KernelsPortable, CPUKernels())
	}
	t.Setenv("GOMLX_SIMD_AVX512", "false")
	if cpuHasAVX2() {
		require.Equal(t, KernelsAVX2, CPUKernels())
	}
	t.Setenv("GOMLX_SIMD_AVX2", "false")
	require.Equal(t, KernelsPortable, CPUKernels())
	t.Setenv("GOMLX_SIMD_AVX512", "")
	t.Setenv("GOMLX_SIMD_AVX2", "")
	t.Setenv("GOMLX_DOT_MATMUL", "false")
	require.Equal(t, KernelsPortable, CPUKernels())
}
