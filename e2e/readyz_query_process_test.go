package e2e

import (
	"encoding/json"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReadyzWhileTheQueryProcessRestarts: `critic serve` runs the DuckDB
// snapshots in a child process and restarts it when it dies. Until the new
// one is ready every POST /query answers 503, so /readyz answers 503 too,
// naming the query process and how it exited, and 200 again once the new
// process is up. Before, /readyz said 200 throughout.
func TestReadyzWhileTheQueryProcessRestarts(t *testing.T) {
	in := startServe(t)
	type check struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	type ready struct {
		Status string           `json:"status"`
		Checks map[string]check `json:"checks"`
	}
	readyz := func() (int, ready) {
		r := in.do("GET", "/readyz", "", nil)
		var body ready
		require.NoError(t, json.Unmarshal(r.Body, &body), string(r.Body))
		return r.Status, body
	}
	var body ready
	var status int
	require.Eventually(t, func() bool {
		status, body = readyz()
		return status == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "the instance never became ready: %+v", body)
	require.True(t, body.Checks["query_process"].OK, "%+v", body)

	old := childPIDs(t, in.cmd.Process.Pid)
	require.Len(t, old, 1, "serve runs one query process")
	require.NoError(t, syscall.Kill(old[0], syscall.SIGKILL))

	// The parent waits a second before it starts the next process, and the
	// next one must open its files before it is ready: /readyz says so.
	require.Eventually(t, func() bool {
		status, body = readyz()
		return status == http.StatusServiceUnavailable && !body.Checks["query_process"].OK
	}, 30*time.Second, 20*time.Millisecond, "/readyz never reported the dead query process: %d %+v", status, body)
	require.Equal(t, "not_ready", body.Status)
	require.Equal(t, "the query process exited (signal: killed) and is restarting; POST /query answers 503 "+
		"query_process_restarting until it is ready", body.Checks["query_process"].Error)

	require.Eventually(t, func() bool {
		status, body = readyz()
		return status == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "/readyz stayed not ready after the restart: %+v", body)
	require.Equal(t, "ready", body.Status)
	require.True(t, body.Checks["query_process"].OK, "%+v", body)
	now := childPIDs(t, in.cmd.Process.Pid)
	require.Len(t, now, 1)
	require.NotEqual(t, old[0], now[0], "a new query process serves")
}
