package e2e

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/pg/pgtest"
)

// TestDistributedInstances runs what docs/operations.md's "Running it distributed"
// describes, on loopback: one PostgreSQL, `critic broker --listen`, and
// several `critic serve` processes with their own data directories (so
// their own generated instance ids), and checks what an operator relies on:
//   - every instance gets an id of its own, and a process started with an id
//     a live instance holds is refused, naming the holder;
//   - a write through one instance shows in POST /query on every instance
//     exactly as in the read model;
//   - a newly started instance answers 503 snapshot_catching_up (and
//     /readyz names its snapshot) until it has caught up — never 0 rows —
//     and then the same answer as the others;
//   - an instance killed with kill -9 restarts at once with its id, and
//     answers SQL equal to the read model again.
func TestDistributedInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("starts several processes")
	}
	bin := criticBin(t)
	dbURL := pgtest.NewDatabase(t)
	root := t.TempDir()
	var logBuf bytes.Buffer
	logs := &lockedWriter{mu: &sync.Mutex{}, w: &logBuf}
	defer func() {
		if t.Failed() {
			logs.mu.Lock()
			t.Logf("process logs:\n%s", logBuf.String())
			logs.mu.Unlock()
		}
	}()
	kafkaPort := freePort(t)
	common := append(os.Environ(), "DATABASE_URL="+dbURL, fmt.Sprintf("KAFKA_BROKERS=127.0.0.1:%d", kafkaPort),
		"BLOB_URL=file://"+filepath.Join(root, "blobs"), sharedMasterKey(t, root), "CRITIC_WORKER_TOKEN=dist-token", "CRITIC_INSTANCE_ID=")
	serve := func(name string, extra ...string) (*chaosProc, string) {
		port := freePort(t)
		env := append(append([]string{}, common...), fmt.Sprintf("CRITIC_ADDR=127.0.0.1:%d", port),
			"CRITIC_DATA_DIR="+filepath.Join(root, name))
		return &chaosProc{name: name, bin: bin, args: []string{"serve"}, logs: logs, ready: "listening on",
			env: append(env, extra...)}, fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	broker := &chaosProc{name: "broker", bin: bin, logs: logs, ready: "broker listening", env: common,
		args: []string{"broker", "--listen", fmt.Sprintf("127.0.0.1:%d", kafkaPort), "--data-dir", filepath.Join(root, "kafka")}}
	a, urlA := serve("a")
	b, urlB := serve("b")
	procs := []*chaosProc{broker, a, b}
	defer func() {
		for _, proc := range slices.Backward(procs) {
			proc.stop()
		}
	}()
	broker.start(t)
	a.start(t)
	b.start(t)

	// Ids of their own, kept in their data directories.
	idOf := func(name string) string {
		raw, err := os.ReadFile(filepath.Join(root, name, "instance-id"))
		require.NoError(t, err)
		return strings.TrimSpace(string(raw))
	}
	idA, idB := idOf("a"), idOf("b")
	require.NotEqual(t, idA, idB)

	// A third instance with a's id is refused and says why.
	dup, _ := serve("dup", "CRITIC_INSTANCE_ID="+idA)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = dup.env
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "a duplicate instance id must not start: %s", out)
	require.Contains(t, string(out), fmt.Sprintf("instance id %q is in use by the instance on host", idA))
	require.NotContains(t, string(out), "listening on")

	cmd = exec.Command(bin, "users", "create", "--name", "dist")
	cmd.Env = a.env
	raw, err := cmd.CombinedOutput()
	require.NoError(t, err, string(raw))
	m := keyRe.FindStringSubmatch(string(raw))
	require.NotNil(t, m)
	key := m[1]

	client := &http.Client{Timeout: 30 * time.Second}
	call := func(base, method, path string, body any) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, err := json.Marshal(body)
			require.NoError(t, err)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, base+path, rd)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}
	// stored accepts 200, and — while an instance is down and the read
	// model's consumer group has not moved its partitions yet — 503
	// "stored but the read model has not caught up" (the write is in the
	// log; how fast that failover is belongs to another test).
	stored := func(status int, body []byte) {
		t.Helper()
		if status == http.StatusServiceUnavailable && strings.Contains(string(body), `"code":"unavailable"`) {
			return
		}
		require.Equal(t, http.StatusOK, status, string(body))
	}
	importN := func(base string, n int, prefix string) []string {
		t.Helper()
		var ids []string
		lines := genTraces(n, 4, prefix)
		for lo := 0; lo < n; lo += 1000 {
			status, body := call(base, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash",
				"data": strings.Join(lines[lo:min(lo+1000, n)], "\n")})
			stored(status, body)
			if status != http.StatusOK {
				continue
			}
			var res struct {
				TraceIDs []string `json:"trace_ids"`
			}
			require.NoError(t, json.Unmarshal(body, &res))
			ids = append(ids, res.TraceIDs...)
		}
		return ids
	}
	// readModel is what the REST read model says, fingerprinted: the
	// number of traces and the md5 of `external_id:step_count:positive`
	// lines in order, as sqlView computes it from the snapshot.
	readModel := func(base string) string {
		t.Helper()
		var lines []string
		for offset := 0; ; offset += 1000 {
			status, body := call(base, "GET", fmt.Sprintf("/api/v1/rm/traces?limit=1000&offset=%d", offset), nil)
			require.Equal(t, http.StatusOK, status, string(body))
			var page struct {
				Traces []struct {
					ExternalID    string `json:"external_id"`
					PositiveCount int    `json:"positive_count"`
					StepCount     int    `json:"step_count"`
				} `json:"traces"`
			}
			require.NoError(t, json.Unmarshal(body, &page))
			for _, tr := range page.Traces {
				lines = append(lines, fmt.Sprintf("%s:%d:%d", tr.ExternalID, tr.StepCount, tr.PositiveCount))
			}
			if len(page.Traces) < 1000 {
				break
			}
		}
		sort.Strings(lines)
		sum := md5.Sum([]byte(strings.Join(lines, ",")))
		return fmt.Sprintf("%d %x", len(lines), sum)
	}
	const sqlView = `SELECT count(*) || ' ' || md5(string_agg(line, ',' ORDER BY line)) FROM (
		SELECT t.external_id || ':' || t.step_count || ':' || count(a.id) FILTER (WHERE a.rating > 0 AND NOT a.label_error) AS line
		FROM traces t LEFT JOIN annotations a ON a.trace_id = t.id GROUP BY t.id, t.external_id, t.step_count)`
	// sql answers sqlView on base: status and the fingerprint.
	sql := func(base string) (int, string, []byte) {
		t.Helper()
		status, body := call(base, "POST", "/api/v1/rm/query", map[string]string{"sql": sqlView})
		if status != http.StatusOK {
			return status, "", body
		}
		var res struct {
			Rows [][]string `json:"rows"`
		}
		require.NoError(t, json.Unmarshal(body, &res), string(body))
		require.Len(t, res.Rows, 1, string(body))
		return status, res.Rows[0][0], body
	}
	// sameOn waits until POST /query on base answers, and answers what the
	// read model (read through live) holds.
	sameOn := func(base, live string) {
		t.Helper()
		var got, want string
		var body []byte
		var status int
		require.Eventually(t, func() bool {
			status, got, body = sql(base)
			if status != http.StatusOK {
				return false
			}
			want = readModel(live)
			return got == want
		}, 60*time.Second, 100*time.Millisecond, "POST /query on %s: %d %s, read model %s", base, status, got+string(body), want)
	}

	// Write through a; both instances answer what the read model holds.
	ids := importN(urlA, 20, "d")
	for _, id := range ids[:5] {
		status, body := call(urlA, "POST", "/api/v1/rm/traces/"+id+"/annotations", map[string]any{"rating": 1})
		require.Equal(t, http.StatusOK, status, string(body))
	}
	sameOn(urlA, urlA)
	sameOn(urlB, urlA)
	// The query right after a write on the other instance already has it.
	status, body := call(urlB, "POST", "/api/v1/rm/traces/"+ids[5]+"/annotations", map[string]any{"rating": 1})
	require.Equal(t, http.StatusOK, status, string(body))
	status, got, body := sql(urlA)
	require.Equal(t, http.StatusOK, status, string(body))
	require.Equal(t, readModel(urlB), got)

	// Enough data that a new instance needs a moment to catch up; it must
	// say so instead of answering from what it has so far.
	importN(urlA, 5000, "bulk")
	c, urlC := serve("c", "CRITIC_QUERY_WAIT=0s")
	procs = append(procs, c)
	c.start(t)
	readyResp, err := client.Get(urlC + "/readyz")
	require.NoError(t, err)
	readyBody, _ := io.ReadAll(readyResp.Body)
	_ = readyResp.Body.Close()
	status, _, body = sql(urlC)
	require.Equal(t, http.StatusServiceUnavailable, status, "a new instance answered before catching up: %s", body)
	require.Contains(t, string(body), `"code":"snapshot_catching_up"`)
	require.Equal(t, http.StatusServiceUnavailable, readyResp.StatusCode, string(readyBody))
	require.Contains(t, string(readyBody), `"snapshot":{"ok":false`)
	sameOn(urlC, urlA)

	// kill -9 and restart: the same id is claimed again at once, and the
	// instance answers what the read model holds, including writes made
	// while it was down.
	b.kill()
	importN(urlA, 10, "while-b-down")
	b.start(t)
	require.Equal(t, idB, idOf("b"))
	sameOn(urlB, urlA)
	a.kill()
	status, body = call(urlB, "POST", "/api/v1/rm/traces/"+ids[6]+"/annotations", map[string]any{"rating": 1})
	stored(status, body)
	a.start(t)
	require.Equal(t, idA, idOf("a"))
	sameOn(urlA, urlB)
	sameOn(urlB, urlB)
	sameOn(urlC, urlB)
	t.Logf("instances %s, %s and a third agree with the read model (traces, md5: %s)", idA, idB, readModel(urlB))
}
