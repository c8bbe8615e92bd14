package main

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/pg"
)

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestStopsOnlyARunningClusterOnItsPort: `running` tells whether the
// cluster is up, `stop` stops it (and does nothing when it is down), and a
// cluster on another port is untouched.
func TestStopsOnlyARunningClusterOnItsPort(t *testing.T) {
	bin := t.TempDir() + "/pgtestctl"
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	mine := pg.Cluster{Dir: t.TempDir(), Port: freePort(t), Fast: true, Shareable: true}
	other := pg.Cluster{Dir: t.TempDir(), Port: freePort(t), Fast: true, Shareable: true}
	require.NoError(t, other.Ensure(ctx))
	t.Cleanup(func() { _ = other.Stop() })
	run := func(arg string) string {
		cmd := exec.Command(bin, arg)
		cmd.Env = append(cmd.Environ(), "CRITIC_TEST_PG_PORT="+strconv.Itoa(mine.Port), "CRITIC_PGTEST_DIR="+mine.Dir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	require.Equal(t, "no", run("running"))
	require.Equal(t, "", run("stop"), "nothing to stop")

	require.NoError(t, mine.Ensure(ctx))
	t.Cleanup(func() { _ = mine.Stop() })
	require.Equal(t, "yes", run("running"))
	require.Contains(t, run("stop"), "stopped the PostgreSQL test cluster")
	require.False(t, mine.Running(ctx))
	require.Equal(t, "no", run("running"))
	require.True(t, other.Running(ctx), "the cluster on another port keeps running")
}
