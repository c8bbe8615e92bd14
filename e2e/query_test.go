package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
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
