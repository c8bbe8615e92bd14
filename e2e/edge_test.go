package e2e

import (
	"net/http"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

var pprofRe = regexp.MustCompile(`profiler \(unauthenticated, loopback only\) on (http://[^/\s]+)/debug/pprof/`)

// pprofURL is the profiler's base URL that `critic serve` printed.
func (in *instance) pprofURL(t testing.TB) string {
	t.Helper()
	m := pprofRe.FindStringSubmatch(in.logText())
	require.NotNil(t, m, "no profiler address in the server's output:\n%s", in.logText())
	return m[1]
}

// TestPProfNeverOnTheAPIPort: with the profiler on, the API port still
// answers /debug/pprof like any unknown route (with or without a key), and
// the profiler answers only on its own loopback listener.
func TestPProfNeverOnTheAPIPort(t *testing.T) {
	t.Parallel()
	in := startServe(t, "CRITIC_PPROF_ADDR=127.0.0.1:0")
	key := in.newUser("prof", false)
	for _, k := range []string{"", key} {
		r := in.do("GET", "/debug/pprof/", k, nil)
		require.NotEqual(t, http.StatusOK, r.Status, string(r.Body))
		require.NotContains(t, string(r.Body), "goroutine")
		r = in.do("GET", "/debug/pprof/cmdline", k, nil)
		require.NotEqual(t, http.StatusOK, r.Status, string(r.Body))
	}
	resp, err := http.Get(in.pprofURL(t) + "/debug/pprof/")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestPProfRefusesANonLoopbackAddress: a profiler address anyone could reach
// stops the server at start with a message naming the variable.
func TestPProfRefusesANonLoopbackAddress(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "localhost:6060", "10.1.2.3:6060"} {
		cmd := exec.Command(criticBin(t), "serve")
		cmd.Env = append(cmd.Environ(), "CRITIC_PPROF_ADDR="+addr, "DATABASE_URL=postgres://nobody@127.0.0.1:1/none")
		out, err := cmd.CombinedOutput()
		require.Error(t, err, addr)
		require.Contains(t, string(out), "CRITIC_PPROF_ADDR", addr)
		require.Contains(t, string(out), "loopback", addr)
	}
}
