package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// brokenImport appends, straight into the log, a trace.imported event of
// owner whose claim-checked payload is missing from the blob store (a lost
// or corrupted blob). It returns the event id and what to write where to fix it.
func brokenImport(t *testing.T, in *instance, owner, title string) (eventID, blobPath string, blob []byte) {
	t.Helper()
	traceID, stepID := uuid.NewString(), uuid.NewString()
	eventID = uuid.Must(uuid.NewV7()).String()
	blob, err := json.Marshal(map[string]any{"trace_id": traceID, "title": title, "source_format": "stash", "revision": 1,
		"steps": []any{map[string]any{"id": stepID, "index": 0, "role": "user", "content": "hello"}}})
	require.NoError(t, err)
	sum := sha256.Sum256(blob)
	key := "events/" + eventID + ".json"
	cc, err := json.Marshal(map[string]any{"claim_check": map[string]any{"key": key, "sha256": hex.EncodeToString(sum[:]), "size": len(blob)}})
	require.NoError(t, err)
	_, err = in.pool.Exec(context.Background(), `INSERT INTO events (id, stream, version, owner_id, type, actor, payload)
		VALUES ($1, $2, 1, $3, 'trace.imported.v1', 'system', $4)`, eventID, "trace/"+traceID, owner, string(cc))
	require.NoError(t, err)
	return eventID, filepath.Join(in.dataDir, "blobs", filepath.FromSlash(key)), blob
}

func (in *instance) userID(name string) string {
	var id string
	require.NoError(in.t, in.pool.QueryRow(context.Background(), "SELECT id::text FROM rm_users WHERE name = $1", name).Scan(&id))
	return id
}

func (in *instance) eventually(what string, cond func() bool) {
	in.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			in.t.Fatalf("timed out waiting for %s\n%s", what, in.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOneBadEventParksOnlyItsOwner: an event whose claim-checked payload is
// gone cannot be applied. It used to be redelivered forever, freezing the
// read model for every account; now it is retried, parked, and only its
// owner's later events wait (with a clear 503) until an operator fixes the
// blob and retries it; then everything held is applied, in order.
func TestOneBadEventParksOnlyItsOwner(t *testing.T) {
	in := startServe(t)
	alice := in.newUser("alice", false)
	bob := in.newUser("bob", false)
	carol := in.newUser("carol", false)
	in.importTraces(alice, "stash", `{"id":"a1","steps":[{"role":"user","content":"first"}]}`)
	carolTrace := in.importTraces(carol, "stash", `{"id":"c1","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`)[0]

	badID, blobPath, blob := brokenImport(t, in, in.userID("alice"), "recovered")
	parked := func(id, projection string) bool {
		var n int
		require.NoError(t, in.pool.QueryRow(context.Background(), `SELECT count(*) FROM projection_parked WHERE event_id = $1
			AND (projection = $2 OR starts_with(projection, $2 || '-'))`, // snapshot-<instance>
			id, projection).Scan(&n))
		return n == 1
	}
	in.eventually("the bad event to be parked", func() bool { return parked(badID, "readmodel") && parked(badID, "snapshot") })

	// Alice's writes are stored, and the API says at once why they do not show.
	r := in.do("POST", "/api/v1/rm/traces/import", alice, map[string]any{"format": "stash", "data": `{"id":"a2","steps":[{"role":"user","content":"second"}]}`})
	require.Equal(t, http.StatusServiceUnavailable, r.Status, string(r.Body))
	body := r.JSON(t)
	require.Equal(t, "projection_parked", body["code"])
	require.Contains(t, body["detail"], badID)
	require.Contains(t, body["detail"], "critic projections retry "+badID)

	// Everyone else keeps working.
	ids := in.importTraces(bob, "stash", `{"id":"b1","steps":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, "hi", in.getTrace(t, bob, ids[0]).Steps[0]["content"])

	out, err := in.cli("projections", "status")
	require.NoError(t, err, out)
	require.Contains(t, out, badID)
	require.Contains(t, out, in.userID("alice"))
	require.Contains(t, out, "claim-checked payload")
	require.Regexp(t, `readmodel\s+\d+\s+\d+\s+1\s`, out)

	// A dataset that cannot be built fails the model with the reason, not
	// a redelivery loop (and the dispatch projection parks nothing).
	carolBad, _, _ := brokenImport(t, in, in.userID("carol"), "lost")
	in.eventually("carol's bad event to be parked", func() bool { return parked(carolBad, "readmodel") })
	r = in.do("POST", "/api/v1/rm/reward-models", carol, map[string]any{"name": "m", "trace_ids": []string{carolTrace}})
	require.Equal(t, http.StatusServiceUnavailable, r.Status, "stored, held behind carol's parked event: %s", r.Body)
	var reason, msg string
	in.eventually("the model to fail", func() bool {
		// carol's is the only model; reward_model payloads are sealed.
		ps := in.openedPayloads(t, "reward_model.training_failed.v1")
		if len(ps) == 0 {
			return false
		}
		reason, msg = fmt.Sprint(ps[0]["reason"]), fmt.Sprint(ps[0]["error"])
		return true
	})
	require.Equal(t, "dataset_error", reason)
	require.Contains(t, msg, "could not be built")
	require.Contains(t, msg, "retry the model")
	require.False(t, parked(carolBad, "dispatch"))

	// Retrying before the fix fails again and says so.
	out, err = in.cli("projections", "retry", badID)
	require.Error(t, err, out)
	require.Contains(t, out, "failed again")

	// The operator restores the blob and retries: the event and alice's
	// held write are applied, in order, and alice is back to normal.
	require.NoError(t, os.MkdirAll(filepath.Dir(blobPath), 0o755))
	require.NoError(t, os.WriteFile(blobPath, blob, 0o644))
	out, err = in.cli("projections", "retry", badID)
	require.NoError(t, err, out)
	require.Contains(t, out, "retried 1 event")
	require.False(t, parked(badID, "readmodel"))
	list := in.do("GET", "/api/v1/rm/traces", alice, nil).JSON(t)
	require.Equal(t, float64(3), list["total"], "a1, the recovered trace and the held a2")
	in.importTraces(alice, "stash", `{"id":"a3","steps":[{"role":"user","content":"third"}]}`)
	in.eventually("alice's query snapshot to catch up", func() bool {
		r := in.do("POST", "/api/v1/rm/query", alice, map[string]any{"sql": "SELECT count(*) AS n FROM traces"})
		if r.Status != http.StatusOK {
			return false
		}
		rows, _ := r.JSON(t)["rows"].([]any)
		return len(rows) == 1 && rows[0].([]any)[0] == float64(4)
	})
}
