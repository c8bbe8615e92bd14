package apiserver_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/handlers/apiserver"
	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/projections/snapshot"
)

type queryReply struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
	Detail  string   `json:"detail"`
	Code    string   `json:"code"`
}

func (e *opsEnv) query(t *testing.T, sql string) (int, queryReply) {
	t.Helper()
	r := e.do(t, "POST", "/api/v1/rm/query", map[string]string{"sql": sql})
	var body queryReply
	require.NoError(t, json.Unmarshal(r.body, &body), string(r.body))
	return r.status, body
}

// A write the snapshot has not applied yet is never answered from partial
// data: with the bus down the caller's new trace cannot reach the snapshot,
// so POST /query waits its bounded time and answers 503
// snapshot_catching_up saying how far it is — not the old rows — and
// /readyz names the lagging snapshot. Once the bus is back the same query
// answers every trace, and the position file records the log position the
// snapshot reflects.
func TestQueryNeverAnswersFromASnapshotBehindTheCallersWrite(t *testing.T) {
	ctx := context.Background()
	kafkaDir := t.TempDir()
	broker, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{DataDir: kafkaDir})
	require.NoError(t, err)
	_, portText, err := net.SplitHostPort(broker.Addrs()[0])
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	snapDir := t.TempDir()
	e := startOps(t, func(c *apiserver.Config) {
		c.KafkaBrokers = broker.Addrs()
		c.SnapshotDir = snapDir
		// Long enough for the first query to see its write under a loaded `make
		// test` (300 ms was not, on 2 cores); the bus-down query waits it out.
		c.QueryWait = 5 * time.Second
		c.ReadyMaxLag = 1
		c.WaitTimeout = 30 * time.Second
	})
	t.Cleanup(func() { _ = broker.Close() })

	require.Equal(t, http.StatusOK, e.importTraces(t, "q-1", "q-2").status)
	status, body := e.query(t, "SELECT external_id FROM traces ORDER BY 1")
	require.Equal(t, http.StatusOK, status, "%+v", body)
	require.Equal(t, [][]any{{"q-1"}, {"q-2"}}, body.Rows, "a write answered by POST /query is in the next query")

	require.NoError(t, broker.Close())
	res, err := e.srv.Cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: commands.Actor{UserID: e.userID}, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(traceLine("q-3") + "\n" + traceLine("q-4"))}})
	require.NoError(t, err)
	require.Len(t, res.TraceIDs, 2)

	status, body = e.query(t, "SELECT external_id FROM traces ORDER BY 1")
	require.Equal(t, http.StatusServiceUnavailable, status, "%+v", body)
	require.Equal(t, "snapshot_catching_up", body.Code)
	require.Contains(t, body.Detail, "catching up with the event log")
	require.Regexp(t, `applied events up to position \d+, this query needs position \d+ \(\d+ to go\)`, body.Detail)
	require.Nil(t, body.Rows)

	status, ready := e.readyz(t)
	require.Equal(t, http.StatusServiceUnavailable, status)
	snap, ok := ready.Checks["snapshot"]
	require.True(t, ok, "%+v", ready)
	require.False(t, snap.OK)
	require.NotNil(t, snap.Lag)
	require.GreaterOrEqual(t, *snap.Lag, int64(2))

	broker, err = bus.StartEmbedded(ctx, bus.EmbeddedConfig{DataDir: kafkaDir, Port: port})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		status, body = e.query(t, "SELECT external_id FROM traces ORDER BY 1")
		return status == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "the snapshot never caught up: %+v", body)
	require.Equal(t, [][]any{{"q-1"}, {"q-2"}, {"q-3"}, {"q-4"}}, body.Rows)
	require.Eventually(t, func() bool {
		status, ready = e.readyz(t)
		return status == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "/readyz stayed not ready: %+v", ready)
	require.True(t, ready.Checks["snapshot"].OK)

	var head int64
	require.NoError(t, e.pool.QueryRow(ctx, "SELECT max(seq) FROM events").Scan(&head))
	var pos struct {
		Applied int64 `json:"applied"`
	}
	require.Eventually(t, func() bool {
		raw, err := os.ReadFile(filepath.Join(snapDir, snapshot.PositionFile))
		return err == nil && json.Unmarshal(raw, &pos) == nil && pos.Applied == head
	}, 30*time.Second, 50*time.Millisecond, "the snapshot records the log position it reflects: %d, log head %d", pos.Applied, head)
}
