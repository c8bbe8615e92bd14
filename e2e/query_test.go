package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type queryResult struct {
	Columns   []string `json:"columns"`
	Rows      [][]any  `json:"rows"`
	Truncated bool     `json:"truncated"`
}

// query posts SQL and requires 200.
func (in *instance) query(t *testing.T, key, sql string) queryResult {
	t.Helper()
	r := in.do("POST", "/api/v1/rm/query", key, map[string]any{"sql": sql})
	require.Equal(t, http.StatusOK, r.Status, "%s: %s", sql, r.Body)
	var res queryResult
	require.NoError(t, json.Unmarshal(r.Body, &res))
	return res
}

// awaitQuery polls until sql returns want: the snapshot behind /query is
// eventually consistent (it trails the log by the relay and the snapshot
// projection), unlike the REST reads, which wait for the read model.
func (in *instance) awaitQuery(t *testing.T, key, sql string, want [][]any) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got [][]any
	for time.Now().Before(deadline) {
		got = in.query(t, key, sql).Rows
		if equalJSON(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: still %v, want %v", sql, got, want)
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

const roleCounts = "SELECT role, count(*) AS n FROM steps GROUP BY role ORDER BY role"

func TestQueryThroughTheAPI(t *testing.T) {
	in := startServe(t)
	alice := in.newUser("alice", false)
	bob := in.newUser("bob", false)
	out, err := in.cli("users", "issue-key", "--name", "alice", "--read-only-key")
	require.NoError(t, err, out)
	aliceRO := keyRe.FindStringSubmatch(out)[1]

	ids := in.importTraces(alice, "stash", refundTrace+"\n"+`{"steps":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"}]}`)
	require.Len(t, ids, 2)
	in.importTraces(bob, "stash", `{"steps":[{"role":"user","content":"BOBSECRET"}]}`)

	in.awaitQuery(t, alice, "SELECT count(*) FROM steps", [][]any{{7}})
	in.awaitQuery(t, bob, "SELECT count(*) FROM steps", [][]any{{1}})

	aliceRoles := [][]any{{"assistant", 3}, {"system", 1}, {"tool", 1}, {"user", 2}}
	t.Run("group by, read-only key, only own rows", func(t *testing.T) {
		res := in.query(t, aliceRO, roleCounts)
		require.Equal(t, []string{"role", "n"}, res.Columns)
		require.True(t, equalJSON(aliceRoles, res.Rows), "%v", res.Rows)
		require.False(t, res.Truncated)
		require.True(t, equalJSON([][]any{{"user", 1}}, in.query(t, bob, roleCounts).Rows))
		res = in.query(t, alice, "SELECT count(*) FROM steps WHERE content LIKE '%BOBSECRET%'")
		require.True(t, equalJSON([][]any{{0}}, res.Rows))
		res = in.query(t, alice, "SELECT title, step_count, metadata->>'agent' FROM traces WHERE id = '"+ids[0]+"'")
		require.True(t, equalJSON([][]any{{"Refund request for order 1182", 5, "support-bot"}}, res.Rows), "%v", res.Rows)
	})

	t.Run("rejected SQL is 422 with DuckDB's message and changes nothing", func(t *testing.T) {
		for _, c := range []struct{ sql, detail string }{
			{"SELECT 1; DROP TABLE steps", "only a single SELECT statement is allowed"},
			{"DROP TABLE steps", "only a single SELECT statement is allowed"},
			{"COPY steps TO '/tmp/x.csv'", ""}, // refused by DuckDB's file system lock or as not a SELECT
			{"ATTACH '/tmp/x.duckdb' AS x", ""},
			{"SELECT * FROM read_csv('/etc/passwd')", "external access is disabled"},
			{"SELEC 1", "syntax error"},
			{"SELECT nope FROM steps", `Referenced column "nope" not found`},
		} {
			r := in.do("POST", "/api/v1/rm/query", alice, map[string]any{"sql": c.sql})
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s: %s", c.sql, r.Body)
			require.Contains(t, r.JSON(t)["detail"], c.detail, c.sql)
		}
		require.True(t, equalJSON(aliceRoles, in.query(t, alice, roleCounts).Rows))
	})

	t.Run("request shape and auth", func(t *testing.T) {
		r := in.do("POST", "/api/v1/rm/query", alice, map[string]any{"sql": "SELECT 1", "limit": 5})
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Body))
		require.Equal(t, "limit", r.JSON(t)["field"])
		r = in.do("POST", "/api/v1/rm/query", alice, map[string]any{})
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Body))
		require.Equal(t, "sql", r.JSON(t)["field"])
		r = in.do("POST", "/api/v1/rm/query", "", map[string]any{"sql": "SELECT 1"})
		require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Body))
		r = in.do("POST", "/api/v1/rm/query", "not-a-key", map[string]any{"sql": "SELECT 1"})
		require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Body))
	})

	t.Run("row cap", func(t *testing.T) {
		res := in.query(t, alice, "SELECT * FROM range(1000000)")
		require.Len(t, res.Rows, 1000)
		require.True(t, res.Truncated)
	})

	t.Run("a deleted trace leaves the snapshot", func(t *testing.T) {
		r := in.do("DELETE", "/api/v1/rm/traces/"+ids[1], alice, nil)
		require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
		in.awaitQuery(t, alice, "SELECT count(*) FROM steps", [][]any{{5}})
		require.True(t, equalJSON([][]any{{0}}, in.query(t, alice, "SELECT count(*) FROM traces WHERE id = '"+ids[1]+"'").Rows))
	})

	t.Run("critic replay snapshot rebuilds the same rows", func(t *testing.T) {
		queries := []string{roleCounts, "SELECT id, external_id, title, source_format, source_id, step_count, metadata, created_at, updated_at FROM traces ORDER BY id",
			"SELECT * FROM steps ORDER BY trace_id, step_index", "SELECT * FROM annotations ORDER BY id"}
		before := map[string][][]any{}
		for _, q := range queries {
			before[q] = in.query(t, alice, q).Rows
		}
		bobBefore := in.query(t, bob, "SELECT * FROM steps").Rows

		out, err := in.cli("replay", "snapshot")
		require.Error(t, err, "replay must refuse while the server owns the files")
		require.Contains(t, out, "stop `critic serve`")

		in.stop()
		out, err = in.cli("replay", "snapshot")
		require.NoError(t, err, out)
		require.Contains(t, out, "query snapshots rebuilt from")
		in.start()
		for _, q := range queries {
			require.True(t, equalJSON(before[q], in.query(t, alice, q).Rows), q)
		}
		require.True(t, equalJSON(bobBefore, in.query(t, bob, "SELECT * FROM steps").Rows))

		// The restarted projection goes on from the rebuilt files: later
		// events apply once, redelivered ones not at all.
		in.importTraces(alice, "stash", `{"steps":[{"role":"user","content":"after replay"}]}`)
		in.awaitQuery(t, alice, "SELECT count(*) FROM steps", [][]any{{6}})
		time.Sleep(500 * time.Millisecond)
		require.True(t, equalJSON([][]any{{6}}, in.query(t, alice, "SELECT count(*) FROM steps").Rows))
	})

	require.NotContains(t, strings.ToLower(in.logText()), "snapshot stopped")
}

// postQuery posts sql to /query with key and returns the status, the
// Retry-After header and the body; safe from any goroutine.
func postQuery(url, key, sql string) (int, string, []byte, error) {
	raw, _ := json.Marshal(map[string]any{"sql": sql})
	req, err := http.NewRequest("POST", url+"/api/v1/rm/query", bytes.NewReader(raw))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), body, err
}

// heavySQL keeps a query busy until its time limit (10 s).
const heavySQL = "SELECT count(*) FROM range(100000000000) a WHERE a.range % 7 = 3"

// TestQueryLimitsThroughTheAPI: /query's limits answer 422 or 503 naming the
// limit through REST and Connect; text with no statement is 422, not 500; a
// result is cut at CRITIC_QUERY_MAX_BYTES; and while one account runs heavy
// queries another account's small queries are served (none refused), the
// process-wide limit refusing only once every slot is busy.
func TestQueryLimitsThroughTheAPI(t *testing.T) {
	in := startServe(t, "CRITIC_QUERY_MAX_STATEMENT_BYTES=4KiB", "CRITIC_QUERY_MAX_SET_OPERATIONS=4",
		"CRITIC_QUERY_MAX_BYTES=1MiB", "CRITIC_QUERY_MAX_CONCURRENT=3")
	alice := in.newUser("alice", false)
	bob := in.newUser("bob", false)
	carol := in.newUser("carol", false)

	t.Run("no statement is 422 over REST and Connect", func(t *testing.T) {
		for _, sql := range []string{"-- only a comment", ";", "\uFEFF", "/* x */ ;\n"} {
			r := in.do("POST", "/api/v1/rm/query", alice, map[string]any{"sql": sql})
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%q: %s", sql, r.Body)
			require.Equal(t, "invalid_query", r.JSON(t)["code"])
			require.Contains(t, r.JSON(t)["detail"], "empty query")
			raw, _ := json.Marshal(map[string]any{"sql": sql})
			c := in.do("POST", "/critic.v1.QueryService/Query", alice, raw)
			require.Equal(t, http.StatusBadRequest, c.Status, "%q: %s", sql, c.Body)
			require.Equal(t, "invalid_argument", c.JSON(t)["code"])
		}
	})

	t.Run("statement limits are 422 naming the limit", func(t *testing.T) {
		r := in.do("POST", "/api/v1/rm/query", alice, map[string]any{"sql": "SELECT '" + strings.Repeat("x", 5000) + "'"})
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Body))
		require.Equal(t, "query_too_long", r.JSON(t)["code"])
		require.Contains(t, r.JSON(t)["detail"], "the limit is 4096 bytes")
		r = in.do("POST", "/api/v1/rm/query", alice, map[string]any{"sql": "SELECT 1" + strings.Repeat(" UNION ALL SELECT 1", 5)})
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Body))
		require.Equal(t, "query_too_complex", r.JSON(t)["code"])
		require.Contains(t, r.JSON(t)["detail"], "the limit is 4")
	})

	t.Run("result bytes capped", func(t *testing.T) {
		r := in.do("POST", "/api/v1/rm/query", alice, map[string]any{"sql": "SELECT repeat('x', 100000) AS big FROM range(600)"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body[:min(len(r.Body), 500)]))
		var res queryResult
		require.NoError(t, json.Unmarshal(r.Body, &res))
		require.True(t, res.Truncated)
		require.Len(t, res.Rows, 10)
		require.Less(t, len(r.Body), 1<<20+4096)
	})

	t.Run("a heavy account leaves the others served", func(t *testing.T) {
		light := func(n int) []time.Duration {
			var took []time.Duration
			for range n {
				start := time.Now()
				status, _, body, err := postQuery(in.url, carol, "SELECT count(*) FROM steps")
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, status, string(body))
				took = append(took, time.Since(start))
			}
			return took
		}
		before := light(10)

		// Bob sends three heavy queries: two run (his per-account turns),
		// the third waits for a turn without holding a process-wide slot.
		var wg sync.WaitGroup
		heavy := make(chan string, 4)
		for range 3 {
			wg.Go(func() {
				status, _, body, err := postQuery(in.url, bob, heavySQL)
				heavy <- fmt.Sprint(status, " ", string(body), err)
			})
		}
		time.Sleep(time.Second)
		during := light(10)
		t.Logf("another account's small query: p50 %s before, %s while one account runs heavy queries", median(before), median(during))

		// Alice's heavy query takes the last slot: now a fourth query
		// waits 1 s and is refused, naming the limit.
		wg.Go(func() {
			status, _, body, err := postQuery(in.url, alice, heavySQL)
			heavy <- fmt.Sprint(status, " ", string(body), err)
		})
		time.Sleep(time.Second)
		status, retry, body, err := postQuery(in.url, carol, "SELECT 1")
		require.NoError(t, err)
		require.Equal(t, http.StatusServiceUnavailable, status, string(body))
		require.Equal(t, "1", retry)
		require.Contains(t, string(body), "query_capacity")
		require.Contains(t, string(body), "limit of 3 concurrent queries")
		wg.Wait()
		close(heavy)
		for h := range heavy {
			require.Contains(t, h, "query_timeout", "heavy queries end at the time limit")
		}
		light(1) // slots are free again
	})
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestQueryMemoryIsTheQueryProcesss: the memory statements — a
// 600 MB result, list_sort(range(3e7)) (constant folding at plan time, where
// neither DuckDB's memory_limit nor its interrupt applies), a 2.4 GB list and
// a 20,000-way UNION ALL — answer within bounds (200 truncated, 422 or 503
// naming the limit) while the API process's peak resident memory grows by
// less than 256 MiB: the statements run in the query process, whose memory
// the kernel caps at CRITIC_QUERY_PROCESS_MEMORY, and which is ended and
// restarted when its work runs past the deadline. Run in one process, the
// same statements took the API to 3 GB and more. Queries are served after.
func TestQueryMemoryIsTheQueryProcesss(t *testing.T) {
	in := startServe(t, "CRITIC_QUERY_PROCESS_MEMORY=768MiB", "CRITIC_QUERY_MEMORY=256MiB")
	alice := in.newUser("alice", false)
	r := in.do("POST", "/api/v1/rm/query", alice, map[string]any{"sql": "SELECT 1 AS one"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	children := childPIDs(t, in.cmd.Process.Pid)
	require.Len(t, children, 1, "serve runs one query process")
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", children[0]))
	require.NoError(t, err)
	require.Regexp(t, `Max data size\s+805306368\s+805306368`, string(limits))
	before := peakRSS(t, in.cmd.Process.Pid)

	for _, q := range []struct{ name, sql string }{
		{"600 MB of result", "SELECT repeat('x', 1000000) AS x FROM range(600)"},
		{"list_sort(range(3e7))", "SELECT len(list_sort(range(30000000))) AS n"},
		{"a 2.4 GB list", "SELECT len(range(300000000)) AS n"},
		{"20,000-way UNION ALL", "SELECT 1" + strings.Repeat(" UNION ALL SELECT 1", 20000)},
	} {
		r := in.do("POST", "/api/v1/rm/query", alice, map[string]any{"sql": q.sql})
		body := string(r.Body[:min(len(r.Body), 300)])
		t.Logf("%s: %d %s", q.name, r.Status, body)
		switch r.Status {
		case http.StatusOK:
			require.Contains(t, string(r.Body), `"truncated":true`, q.name)
		case http.StatusUnprocessableEntity:
			require.Regexp(t, `query_out_of_memory|query_timeout|query_too_long|query_too_complex`, body, q.name)
		case http.StatusServiceUnavailable:
			require.Contains(t, body, "query_process_restarting", q.name)
		default:
			t.Fatalf("%s: want 200 truncated, 422 or 503, got %d %s", q.name, r.Status, body)
		}
		after := peakRSS(t, in.cmd.Process.Pid)
		require.Less(t, after-before, int64(256<<20), "%s: the API's memory grew by %d MiB", q.name, (after-before)>>20)
	}
	t.Logf("API peak resident memory: %d MiB before, %d MiB after", before>>20, peakRSS(t, in.cmd.Process.Pid)>>20)

	served := func(msg string) {
		t.Helper()
		require.Eventually(t, func() bool {
			r := in.do("POST", "/api/v1/rm/query", alice, map[string]any{"sql": "SELECT 2 AS two"})
			if r.Status == http.StatusServiceUnavailable {
				require.Contains(t, string(r.Body), "query_process_restarting")
			}
			return r.Status == http.StatusOK && strings.Contains(string(r.Body), `"rows":[[2]]`)
		}, 60*time.Second, 250*time.Millisecond, msg)
	}
	served("queries are served again")

	// A query process that dies is replaced; the API answers meanwhile.
	old := childPIDs(t, in.cmd.Process.Pid)
	require.Len(t, old, 1)
	require.NoError(t, syscall.Kill(old[0], syscall.SIGKILL))
	served("queries are served by a new query process")
	now := childPIDs(t, in.cmd.Process.Pid)
	require.Len(t, now, 1)
	require.NotEqual(t, old[0], now[0])
	r = in.do("GET", "/readyz", "", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
}

// childPIDs lists the processes whose parent is pid (each thread lists the
// children it started).
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	require.NoError(t, err)
	var all []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		all = append(all, strings.Fields(string(raw))...)
	}
	var out []int
	for _, f := range all {
		n, err := strconv.Atoi(f)
		require.NoError(t, err)
		out = append(out, n)
	}
	return out
}

// peakRSS is a process's peak resident memory (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for l := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return n << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}
