package worker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/rewardmodels"
)

// The device a worker reports for the training estimate follows
// GOMLX_BACKEND: a CUDA PJRT plugin is a GPU, anything else the CPU.
func TestDeviceKindFollowsTheBackend(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"":                  rewardmodels.DeviceCPU,
		"go":                rewardmodels.DeviceCPU,
		"go:ops_sequential": rewardmodels.DeviceCPU,
		"xla:/opt/jax_plugins/xla_cuda13/xla_cuda_plugin.so": rewardmodels.DeviceGPU,
		"xla:cuda,notf32":             rewardmodels.DeviceGPU,
		"xla:/opt/pjrt/cpu_plugin.so": rewardmodels.DeviceCPU,
		"nonsense:":                   rewardmodels.DeviceCPU,
	} {
		require.Equal(t, want, deviceKind(spec), spec)
	}
}
