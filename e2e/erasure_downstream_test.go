package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestErasureReachesTheDataDir deletes one of two traces and then searches
// every file under $CRITIC_DATA_DIR — the embedded broker's segments, the
// DuckDB snapshot files and their replicas, the query process's files, the
// blobs — for its marker: a deleted row's bytes survive in a DuckDB file
// until a checkpoint rewrites its blocks, so erasure must force one. The
// other trace's marker still reads through the API and /query.
func TestErasureReachesTheDataDir(t *testing.T) {
	in := startServe(t)
	key := in.newUser("downstream", false)
	const gone, kept = "MARKER-DOWN-GONE-4b1e", "MARKER-DOWN-KEPT-8d07"
	trace := func(id, marker string) string {
		return `{"id":"` + id + `","steps":[{"role":"user","content":"My order ` + marker + ` is late."},` +
			`{"role":"assistant","content":"Sure! Order ` + marker + ` ships today."}]}`
	}
	ids := in.importTraces(key, "stash", trace("gone", gone)+"\n"+trace("kept", kept))
	require.Len(t, ids, 2)
	count := `SELECT count(*) FROM steps WHERE content LIKE 'My order MARKER-DOWN-%'`
	in.awaitQuery(t, key, count, [][]any{{2}})
	// A restart closes the snapshot writers, which checkpoints both traces
	// into the owner file's blocks: erasure must reach those too, not only
	// the write-ahead log.
	in.stop()
	in.start()

	r := in.do("DELETE", "/api/v1/rm/traces/"+ids[0], key, nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
	waitReadModel(t, in)
	in.awaitQuery(t, key, count, [][]any{{1}})

	require.Empty(t, filesLeftWith(t, in.dataDir, gone), "no file under the data dir holds the deleted trace")
	tr := in.do("GET", "/api/v1/rm/traces/"+ids[1], key, nil)
	require.Equal(t, http.StatusOK, tr.Status)
	require.Contains(t, string(tr.Body), kept, "the other trace still reads")
	in.awaitQuery(t, key, `SELECT count(*) FROM steps WHERE content LIKE '%`+kept+`%'`, [][]any{{2}})
}
