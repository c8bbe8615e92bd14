package e2e

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// `critic worker --help` prints the worker's help and exits 0, without
// running the start-up checks (which would fail here: nothing is set); an
// unknown argument is refused with a pointer to --help.
func TestWorkerHelp(t *testing.T) {
	t.Parallel()
	bin := criticBin(t)
	env := append(os.Environ(), "CRITIC_API_URL=", "CRITIC_WORKER_TOKEN=", "KAFKA_BROKERS=", "CRITIC_DATA_DIR="+t.TempDir())
	for _, arg := range []string{"--help", "-h"} {
		cmd := exec.Command(bin, "worker", arg)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		require.Contains(t, string(out), "critic worker — a standalone training")
		require.Contains(t, string(out), "CRITIC_API_URL")
		require.Contains(t, string(out), "comma-separated")
		require.NotContains(t, string(out), "is required", "no checks ran")
	}
	cmd := exec.Command(bin, "worker", "--bogus")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "critic worker --help")
}
