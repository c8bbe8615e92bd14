package e2e

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/keyring"
	"github.com/criticml/critic/platform/metrics"
	"github.com/criticml/critic/platform/metrics/metricstest"
	"github.com/criticml/critic/projections/dispatch"
	"github.com/criticml/critic/projections/readmodel"
)

// retentionTrace is a small trace whose step content and tool input carry
// marker.
func retentionTrace(id, marker string) string {
	return `{"id":"` + id + `","steps":[{"role":"user","content":"Order ` + marker + ` is late"},` +
		`{"role":"assistant","content":"","tool_name":"lookup","tool_input":{"order":"` + marker + `"},"tool_call_id":"c1"},` +
		`{"role":"tool","content":"found","tool_name":"lookup","tool_call_id":"c1"},{"role":"assistant","content":"It ships today."}]}`
}

// TestRetentionErasesExactlyTheOldTraces: account A keeps traces 30 days,
// account B has no retention. Three traces were last active before an
// instant T (two of A's, one of B's), two after (one each). The retention
// sweep, run with its clock fixed at T+30 days, erases exactly A's two old
// traces as a deletion does — 404, their markers gone from a pg_dump,
// their keys destroyed, trace.erased.v1 saying "retention: older than 30
// days" — and leaves A's new trace and both of B's alone; it counts them
// in critic_traces_erased_total{reason="retention"}, a second sweep erases
// nothing more, and a replay of the read model equals the live one.
func TestRetentionErasesExactlyTheOldTraces(t *testing.T) {
	in := startServe(t)
	ctx := context.Background()
	keyA, keyB := in.newUser("keeper-a", false), in.newUser("keeper-b", false)
	oldA := in.importTraces(keyA, "stash", retentionTrace("a1", "RET-OLD-A1-5d1e")+"\n"+retentionTrace("a2", "RET-OLD-A2-5d1e"))
	oldB := in.importTraces(keyB, "stash", retentionTrace("b1", "RET-OLD-B1-5d1e"))
	waitReadModel(t, in)
	cutoff := time.Now()
	newA := in.importTraces(keyA, "stash", retentionTrace("a3", "RET-NEW-A3-5d1e"))
	newB := in.importTraces(keyB, "stash", retentionTrace("b2", "RET-NEW-B2-5d1e"))
	waitReadModel(t, in)

	// Setting a period erases nothing by itself; the dry-run counts with
	// the real clock (nothing is 30 days old yet).
	r := in.do("PUT", "/api/v1/rm/retention", keyA, map[string]any{"days": 30})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	got := r.JSON(t)
	require.EqualValues(t, 30, got["days"])
	require.EqualValues(t, 0, got["would_erase"])
	require.NotNil(t, got["cutoff"])
	require.Nil(t, in.do("GET", "/api/v1/rm/retention", keyB, nil).JSON(t)["days"], "B has none")

	// The sweep with its clock fixed 30 days after the instant between the
	// old and the new traces.
	master, err := keyring.ReadMasterKey(filepath.Join(in.dataDir, "master_key"))
	require.NoError(t, err)
	ring, err := keyring.New(in.pool, master)
	require.NoError(t, err)
	blobs, err := blob.NewLocal(filepath.Join(in.dataDir, "blobs"))
	require.NoError(t, err)
	m := metrics.New()
	cmds := commands.New(eventstore.New(in.pool, blobs, eventstore.WithKeyring(ring)), commands.WithErasureCounter(m.TraceErased))
	clock := func() time.Time { return cutoff.Add(30 * 24 * time.Hour) }
	sweep := dispatch.NewRetention(readmodel.NewQueries(in.pool), cmds, in.pool, clock, slog.Default())
	n, err := sweep.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "A's two old traces")
	again, err := sweep.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, again, "a second sweep erases nothing more")
	waitReadModel(t, in)

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	fams := metricstest.Scrape(t, srv.URL)
	require.Equal(t, float64(2), fams.Value("critic_traces_erased_total", "reason=retention"))
	require.Equal(t, float64(0), fams.Value("critic_traces_erased_total", "reason=deleted"))

	for _, id := range oldA {
		require.Equal(t, http.StatusNotFound, in.do("GET", "/api/v1/rm/traces/"+id, keyA, nil).Status)
		var reason, by string
		require.NoError(t, in.pool.QueryRow(ctx, "SELECT payload->>'reason', payload->>'by' FROM events WHERE type = 'trace.erased.v1' AND payload->>'trace_id' = $1", id).Scan(&reason, &by))
		require.Equal(t, "retention: older than 30 days", reason)
		require.Equal(t, "retention", by)
		var tomb int
		require.NoError(t, in.pool.QueryRow(ctx, "SELECT count(*) FROM data_keys WHERE scope = $1 AND wrapped IS NULL AND destroyed_at IS NOT NULL", "trace/"+id).Scan(&tomb))
		require.Equal(t, 1, tomb, "the key is destroyed")
	}
	for _, c := range []struct{ key, id, marker string }{{keyA, newA[0], "RET-NEW-A3-5d1e"}, {keyB, oldB[0], "RET-OLD-B1-5d1e"}, {keyB, newB[0], "RET-NEW-B2-5d1e"}} {
		tr := in.do("GET", "/api/v1/rm/traces/"+c.id, c.key, nil)
		require.Equal(t, http.StatusOK, tr.Status, "%s stays", c.marker)
		require.Contains(t, string(tr.Body), c.marker)
	}
	dump := pgDump(t, in)
	for _, gone := range []string{"RET-OLD-A1-5d1e", "RET-OLD-A2-5d1e"} {
		require.Empty(t, linesWith(dump, gone), "pg_dump holds nothing of %s", gone)
	}
	require.NotEmpty(t, linesWith(dump, "RET-OLD-B1-5d1e"), "B's old trace is untouched")
	require.Len(t, in.openedPayloads(t, "trace.imported.v1"), 3, "only the three kept traces' imports still open")
	var erased int
	require.NoError(t, in.pool.QueryRow(ctx, "SELECT count(*) FROM events WHERE type = 'trace.erased.v1'").Scan(&erased))
	require.Equal(t, 2, erased)

	// The dry-run of a period with the real clock, and a preview.
	got = in.do("GET", "/api/v1/rm/retention?days=1", keyB, nil).JSON(t)
	require.EqualValues(t, 1, got["days"])
	require.EqualValues(t, 0, got["would_erase"])

	before := dumpReadModel(t, in)
	out, err := in.cli("replay", "readmodel")
	require.NoError(t, err, out)
	after := dumpReadModel(t, in)
	for table := range before {
		require.Equal(t, before[table], after[table], "table %s after replay", table)
	}
}

// TestRetentionIsAnAdminsSetting: any member reads GET /retention, only an
// admin changes it (a reviewer's PUT is 403 and changes nothing), and bad
// input is a 422 naming days with nothing stored; null turns it off. A
// DELETE counts in the server's critic_traces_erased_total{reason="deleted"}.
// `critic users retention` sets, previews (--dry-run) and turns it off.
func TestRetentionIsAnAdminsSetting(t *testing.T) {
	t.Parallel()
	in := startServe(t)
	admin := in.newUser("ret-crew", false)
	out, err := in.cli("users", "add-member", "ret-crew", "rita")
	require.NoError(t, err, out)
	reviewer := keyRe.FindStringSubmatch(out)[1]

	r := in.do("GET", "/api/v1/rm/retention", reviewer, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, map[string]any{"days": nil, "would_erase": float64(0), "cutoff": nil}, r.JSON(t))
	r = in.do("PUT", "/api/v1/rm/retention", reviewer, map[string]any{"days": 7})
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Body))
	require.Nil(t, in.do("GET", "/api/v1/rm/retention", admin, nil).JSON(t)["days"], "the refused PUT stored nothing")

	for _, bad := range []any{map[string]any{"days": 0}, map[string]any{"days": 36501}, map[string]any{"days": 2.5}, map[string]any{"days": "7"}, map[string]any{}} {
		r = in.do("PUT", "/api/v1/rm/retention", admin, bad)
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%v: %s", bad, r.Body)
		require.Equal(t, "days", r.JSON(t)["field"], "%v: %s", bad, r.Body)
	}
	r = in.do("GET", "/api/v1/rm/retention?days=0", admin, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Body))
	require.Nil(t, in.do("GET", "/api/v1/rm/retention", admin, nil).JSON(t)["days"], "nothing stored from bad input")

	r = in.do("PUT", "/api/v1/rm/retention", admin, map[string]any{"days": 90})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.EqualValues(t, 90, in.do("GET", "/api/v1/rm/retention", reviewer, nil).JSON(t)["days"], "a reviewer reads it")
	r = in.do("PUT", "/api/v1/rm/retention", admin, map[string]any{"days": nil})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Nil(t, r.JSON(t)["days"], "null turns it off")

	ids := in.importTraces(admin, "stash", retentionTrace("d1", "RET-DEL-77"))
	require.Equal(t, http.StatusNoContent, in.do("DELETE", "/api/v1/rm/traces/"+ids[0], admin, nil).Status)
	require.Equal(t, float64(1), metricstest.Scrape(t, in.url+"/metrics").Value("critic_traces_erased_total", "reason=deleted"))

	// The CLI: a dry run counts and stores nothing; a bad number is refused;
	// DAYS sets the period and erases at once; off turns it off.
	in.importTraces(admin, "stash", retentionTrace("d2", "RET-CLI-78"))
	out, err = in.cli("users", "retention", "ret-crew", "30", "--dry-run")
	require.NoError(t, err, out)
	require.Contains(t, out, "dry run: 0 traces of ret-crew were last active before")
	require.Nil(t, in.do("GET", "/api/v1/rm/retention", admin, nil).JSON(t)["days"], "a dry run stores nothing")
	for _, bad := range [][]string{{"ret-crew", "0"}, {"ret-crew", "soon"}, {"nobody", "30"}, {"ret-crew"}} {
		out, err = in.cli(append([]string{"users", "retention"}, bad...)...)
		require.Error(t, err, "%v: %s", bad, out)
	}
	require.Nil(t, in.do("GET", "/api/v1/rm/retention", admin, nil).JSON(t)["days"], "nothing stored from refused calls")
	out, err = in.cli("users", "retention", "ret-crew", "30")
	require.NoError(t, err, out)
	require.Contains(t, out, "retention for ret-crew: traces older than 30 days are erased daily; erased 0 now")
	require.EqualValues(t, 30, in.do("GET", "/api/v1/rm/retention", admin, nil).JSON(t)["days"])
	out, err = in.cli("users", "retention", "ret-crew", "off")
	require.NoError(t, err, out)
	require.Contains(t, out, "retention off for ret-crew")
	require.Nil(t, in.do("GET", "/api/v1/rm/retention", admin, nil).JSON(t)["days"])
}
