package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/keyring"
)

// TestSealExisting: a trace imported with CRITIC_ENCRYPTION=off (a step
// with a marker, a payload large enough for the blob store, a comment)
// is sealed in place by `critic keys seal-existing` with the server
// stopped. Every event keeps its envelope and opens to the very bytes it
// held; the log and the blob store hold no marker; the trace reads the same
// through the API with encryption on, replay equals live, a second run seals
// nothing, and after DELETE the marker is in no pg_dump and in no file of
// the data directory but the embedded broker's segments (docs/operations.md).
// Following the documented procedure for the broker — delete its segments
// and have the relay publish the log again from its start — leaves the
// marker in no file at all, and the deployment works on as before.
func TestSealExisting(t *testing.T) {
	t.Run("segments kept", func(t *testing.T) { testSealExisting(t, false) })
	t.Run("segments deleted, log republished", func(t *testing.T) { testSealExisting(t, true) })
}

func testSealExisting(t *testing.T, republish bool) {
	ctx := context.Background()
	in := startServe(t, "CRITIC_ENCRYPTION=off")
	key := in.newUser("sealer", false)
	const marker = "MARKER-SEAL-5e1d"
	noise := make([]byte, eventstore.MaxInlinePayload/2+4096)
	_, _ = rand.Read(noise)
	ids := in.importTraces(key, "stash", `{"id":"old","steps":[{"role":"user","content":"My order `+marker+` is late. `+hex.EncodeToString(noise)+`"},`+
		`{"role":"assistant","content":"Sure! Order `+marker+` ships today."}]}`)
	require.Len(t, ids, 1)
	tr := in.getTrace(t, key, ids[0])
	r := in.do("POST", "/api/v1/rm/traces/"+ids[0]+"/annotations", key, map[string]any{"step_id": tr.Steps[1]["id"], "rating": 1,
		"comment": "Customer " + marker + " needs a call."})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	waitReadModel(t, in)
	countWith := func(text string) int {
		var n int
		require.NoError(t, in.pool.QueryRow(ctx, "SELECT count(*) FROM events WHERE strpos(payload::text, $1) > 0", text).Scan(&n))
		return n
	}
	require.Positive(t, countWith(marker), "encryption off: the log holds the marker in clear")
	blobDir := filepath.Join(in.dataDir, "blobs")
	require.NotEmpty(t, filesWith(t, blobDir, marker), "the large payload is in a blob, in clear")
	before := in.do("GET", "/api/v1/rm/traces/"+ids[0], key, nil)
	require.Equal(t, http.StatusOK, before.Status)
	blobs, err := blob.NewLocal(blobDir)
	require.NoError(t, err)
	envelopes, payloads := storedEvents(t, in, eventstore.New(in.pool, blobs))

	// Refused while the server runs, and with encryption off.
	in.env = append(in.env, "CRITIC_ENCRYPTION=on")
	out, err := in.cli("keys", "seal-existing")
	require.Error(t, err, out)
	require.Contains(t, out, "an API instance is running")
	in.stop()
	out, err = in.cli("keys", "seal-existing")
	require.NoError(t, err, out)
	m := regexp.MustCompile(`sealed (\d+) events stored in clear`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.Contains(t, out, "sealed "+m[1]+" of "+m[1]+" events", "progress")
	var sealedRows int
	require.NoError(t, in.pool.QueryRow(ctx, "SELECT count(*) FROM events WHERE payload ? 'sealed' OR payload ? 'claim_check'").Scan(&sealedRows))
	require.Equal(t, m[1], strconv.Itoa(sealedRows), "nothing was sealed before; the count is what is sealed now")
	out, err = in.cli("keys", "seal-existing")
	require.NoError(t, err, out)
	require.Contains(t, out, "sealed 0 events stored in clear", "a second run changes nothing")

	require.Zero(t, countWith(marker), "the log holds no marker")
	require.Empty(t, filesWith(t, blobDir, marker), "no blob holds the marker")
	master, err := keyring.ReadMasterKey(filepath.Join(in.dataDir, "master_key"))
	require.NoError(t, err)
	ring, err := keyring.New(in.pool, master)
	require.NoError(t, err)
	envelopesAfter, payloadsAfter := storedEvents(t, in, eventstore.New(in.pool, blobs, eventstore.WithKeyring(ring)))
	require.Equal(t, envelopes, envelopesAfter, "seq, id, stream, version, owner, type, actor and time are unchanged")
	require.Equal(t, payloads, payloadsAfter, "every payload opens to the bytes it held")
	var inClear int
	require.NoError(t, in.pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE (starts_with(stream, 'trace/') AND type NOT IN ('trace.deleted.v1', 'trace.erased.v1'))
		AND NOT payload ? 'sealed' AND NOT payload ? 'claim_check'`).Scan(&inClear))
	require.Zero(t, inClear, "every trace event is sealed")
	_, err = in.pool.Exec(ctx, "UPDATE events SET actor = actor")
	require.ErrorContains(t, err, "events are immutable", "the trigger still guards the log")

	if republish {
		require.NoError(t, os.RemoveAll(filepath.Join(in.dataDir, "kafka")))
		_, err := in.pool.Exec(ctx, "DELETE FROM relay_cursor WHERE name = 'kafka'")
		require.NoError(t, err)
	}
	in.start()
	after := in.do("GET", "/api/v1/rm/traces/"+ids[0], key, nil)
	require.Equal(t, http.StatusOK, after.Status)
	require.Equal(t, string(before.Body), string(after.Body), "the trace reads the same")
	live := dumpReadModel(t, in)
	out, err = in.cli("replay", "readmodel")
	require.NoError(t, err, out)
	replayed := dumpReadModel(t, in)
	for table := range live {
		require.Equal(t, live[table], replayed[table], "table %s after replay", table)
	}

	if republish {
		// The republished log carries on: a new comment is projected.
		r = in.do("POST", "/api/v1/rm/traces/"+ids[0]+"/annotations", key, map[string]any{"step_id": tr.Steps[0]["id"], "rating": -1,
			"comment": "Second look."})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		waitReadModel(t, in)
		require.Contains(t, string(in.do("GET", "/api/v1/rm/traces/"+ids[0], key, nil).Body), "Second look.")
		require.Eventually(t, func() bool {
			var cursor, head int64
			err := in.pool.QueryRow(ctx, "SELECT (SELECT seq FROM relay_cursor WHERE name = 'kafka'), (SELECT max(seq) FROM events)").Scan(&cursor, &head)
			return err == nil && cursor == head
		}, time.Minute, 100*time.Millisecond, "the relay published the whole log again")
		segs, err := filepath.Glob(filepath.Join(in.dataDir, "kafka", "partitions", "*", "*.dat"))
		require.NoError(t, err)
		require.NotEmpty(t, segs, "the broker holds the republished log")
	}
	r = in.do("DELETE", "/api/v1/rm/traces/"+ids[0], key, nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
	waitReadModel(t, in)
	require.Empty(t, linesWith(pgDump(t, in), marker), "pg_dump holds nothing of the deleted trace")
	var elsewhere, broker []string
	for range 100 { // the query snapshot follows the log shortly after (docs/operations.md "Downstream of the log")
		elsewhere, broker = nil, nil
		for _, f := range filesWith(t, in.dataDir, marker) {
			if strings.HasPrefix(f, filepath.Join(in.dataDir, "kafka")+string(filepath.Separator)) {
				broker = append(broker, f)
			} else {
				elsewhere = append(elsewhere, f)
			}
		}
		if len(elsewhere) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Empty(t, elsewhere, "no file of the data directory but the broker's segments holds the marker")
	if republish {
		require.Empty(t, broker, "the republished broker segments hold only sealed payloads")
	} else if len(broker) > 0 {
		t.Logf("the embedded broker's segments still hold the marker in clear, published before sealing (docs/operations.md says what to do): %v", broker)
	}
}

// storedEvents are the log's envelopes (seq, id, stream, version, owner,
// type, actor, time) and each event's payload as store opens it, by id.
func storedEvents(t *testing.T, in *instance, store *eventstore.Store) ([][]string, map[string]string) {
	t.Helper()
	ctx := context.Background()
	rows, err := in.pool.Query(ctx, `SELECT seq::text, id::text, stream, version::text, owner_id::text, type, actor, recorded_at::text, payload FROM events ORDER BY seq`)
	require.NoError(t, err)
	defer rows.Close()
	var envs [][]string
	payloads := map[string]string{}
	for rows.Next() {
		var seq, id, stream, version, owner, typ, actor, at string
		var payload []byte
		require.NoError(t, rows.Scan(&seq, &id, &stream, &version, &owner, &typ, &actor, &at, &payload))
		envs = append(envs, []string{seq, id, stream, version, owner, typ, actor, at})
		e, err := store.Open(ctx, events.Envelope{ID: id, Stream: stream, OwnerID: owner, Type: typ, Payload: payload})
		require.NoError(t, err, "event %s", id)
		payloads[id] = string(e.Payload)
	}
	require.NoError(t, rows.Err())
	return envs, payloads
}
