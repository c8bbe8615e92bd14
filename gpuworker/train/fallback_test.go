package train

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/matmul"
	"github.com/criticml/critic/gpuworker/model"
)

// A GOEXPERIMENT=simd build (what `make build` produces on amd64) must give the golden
// rewards and gradients on any amd64 CPU: compute picks its kernels at start-up from
// the CPU's features. Each case re-runs TestTorchGolden in a fresh process with the
// features masked — GODEBUG=cpu.avx2=off is Go's own CPU-feature mask, which
// archsimd.X86.AVX2() obeys; AVX-512 detection is not masked by GODEBUG in Go 1.26
// (cpu.X86.HasAVX512 is derived before GODEBUG applies), so compute's
// GOMLX_SIMD_AVX512=false stands in for a CPU without it — and checks both the
// kernels the process reports and the numbers. CRITIC_MATMUL=compute keeps compute's
// float32 matmul in place of gpuworker/matmul's, and CRITIC_OPS=compute compute's
// executors in place of gpuworker/cpuops' (with σ through the softmax trick), both of
// which the parent's own TestTorchGolden runs (on an AVX-512F CPU).
func TestSIMDBuildFallsBackOnOlderCPUs(t *testing.T) {
	if !model.SIMDBuild() {
		t.Skip("built without GOEXPERIMENT=simd: only the portable kernels exist")
	}
	if os.Getenv("CRITIC_FALLBACK_CHILD") != "" {
		t.Skip("child process")
	}
	computes := "compute (" + model.MatmulEnv + "=compute)"
	computeOps := "compute (" + model.OpsEnv + "=compute)"
	type fallback struct {
		name              string
		env               []string
		want, matmul, ops string
	}
	computeOnly := []string{"CRITIC_MATMUL=compute", "CRITIC_OPS=compute"}
	cases := []fallback{
		{"compute's kernels", computeOnly, model.CPUKernels(), computes, computeOps},
		{"no AVX-512", append(computeOnly, "GOMLX_SIMD_AVX512=false"), model.KernelsAVX2, computes, computeOps},
		{"no AVX-512, no AVX2", append(computeOnly, "GOMLX_SIMD_AVX512=false", "GODEBUG=cpu.avx2=off"), model.KernelsPortable, computes, computeOps},
		// Our executors on a CPU without AVX2 (their Go loops, not the AVX ones).
		{"critic's ops, no AVX", []string{"CRITIC_MATMUL=compute", "GOMLX_SIMD_AVX512=false", "GODEBUG=cpu.avx=off,cpu.avx2=off"}, model.KernelsPortable, computes, "critic (8 ops)"},
	}
	if matmul.Available() && model.MatmulKernel() != "critic:avx2-6x16" {
		// gpuworker/matmul's AVX2 kernel, as a CPU without AVX-512 runs it.
		cases = append(cases, fallback{"critic's AVX2 kernel", []string{"CRITIC_MATMUL=avx2-6x16"}, model.CPUKernels(), "critic:avx2-6x16", "critic (8 ops)"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestTorchGolden$", "-test.v", "-test.count=1")
			cmd.Env = append(append(os.Environ(), "CRITIC_FALLBACK_CHILD=1"), c.env...)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			want := c.want
			if model.CPUKernels() == model.KernelsPortable {
				want = model.KernelsPortable // this CPU has no AVX2 at all
			}
			require.Contains(t, string(out), "CPU kernels: "+want)
			require.Contains(t, string(out), "float32 matmul: "+c.matmul)
			require.Contains(t, string(out), "ops: "+c.ops)
			for line := range strings.SplitSeq(string(out), "\n") {
				if strings.Contains(line, "max |torch") {
					t.Log(strings.TrimSpace(line))
				}
			}
			require.Contains(t, string(out), "--- PASS: TestTorchGolden")
		})
	}
}
