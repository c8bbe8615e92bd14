package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/keyring"
	"github.com/criticml/critic/platform/llm/llmtest"
	"github.com/criticml/critic/projections/readmodel"
)

// TestDeletedTraceIsShredded imports two traces, each carrying its own
// marker in a step's content, a tool input, a comment and a quote, the first
// also in a payload large enough to be claim-checked to the blob store.
// After DELETE of the first, its marker is nowhere in a pg_dump of the
// database nor in any file of the blob store, the second's marker still
// reads through the API, and a replay of the read model equals the live one.
func TestDeletedTraceIsShredded(t *testing.T) {
	in := startServe(t)
	key := in.newUser("shredder", false)
	const gone, kept = "MARKER-GONE-7f3a", "MARKER-KEPT-91c2"
	trace := func(id, marker, filler string) string {
		return `{"id":"` + id + `","steps":[{"role":"user","content":"My order ` + marker + ` is late. ` + filler + `"},` +
			`{"role":"assistant","content":"","tool_name":"lookup","tool_input":{"order":"` + marker + `"},"tool_call_id":"c1"},` +
			`{"role":"tool","content":"found","tool_name":"lookup","tool_call_id":"c1"},` +
			`{"role":"assistant","content":"Sure! Order ` + marker + ` ships today."}]}`
	}
	// Random filler: sealed payloads are compressed first, and this trace
	// must still be large enough to be claim-checked.
	noise := make([]byte, eventstore.MaxInlinePayload/2+4096)
	_, _ = rand.Read(noise)
	big := hex.EncodeToString(noise)
	ids := in.importTraces(key, "stash", trace("gone", gone, big)+"\n"+trace("kept", kept, ""))
	require.Len(t, ids, 2)
	for i, marker := range []string{gone, kept} {
		tr := in.getTrace(t, key, ids[i])
		r := in.do("POST", "/api/v1/rm/traces/"+ids[i]+"/annotations", key, map[string]any{"step_id": tr.Steps[3]["id"], "rating": 1,
			"comment": "Customer " + marker + " needs a call.", "quote": map[string]any{"text": "Order " + marker, "prefix": "Sure! ", "suffix": " ships today."}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	}
	var blobs int
	require.NoError(t, in.pool.QueryRow(context.Background(), "SELECT count(*) FROM events WHERE payload ? 'claim_check'").Scan(&blobs))
	require.Equal(t, 1, blobs, "the large trace is claim-checked to the blob store")
	var clear int
	require.NoError(t, in.pool.QueryRow(context.Background(), "SELECT count(*) FROM events WHERE strpos(payload::text, $1) > 0", kept).Scan(&clear))
	require.Zero(t, clear, "payloads are sealed in the log")

	r := in.do("DELETE", "/api/v1/rm/traces/"+ids[0], key, nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
	require.Equal(t, http.StatusNotFound, in.do("GET", "/api/v1/rm/traces/"+ids[0], key, nil).Status)
	waitReadModel(t, in)

	require.Empty(t, linesWith(pgDump(t, in), gone), "pg_dump holds nothing of the deleted trace")
	require.NotEmpty(t, linesWith(pgDump(t, in), kept), "pg_dump still holds the other trace (read model)")
	require.Empty(t, filesWith(t, filepath.Join(in.dataDir, "blobs"), gone), "no blob holds the deleted trace")
	var erased int
	require.NoError(t, in.pool.QueryRow(context.Background(), "SELECT count(*) FROM events WHERE type = 'trace.erased.v1' AND payload->>'trace_id' = $1", ids[0]).Scan(&erased))
	require.Equal(t, 1, erased)
	var tomb int
	require.NoError(t, in.pool.QueryRow(context.Background(), "SELECT count(*) FROM data_keys WHERE scope = $1 AND wrapped IS NULL AND destroyed_at IS NOT NULL", "trace/"+ids[0]).Scan(&tomb))
	require.Equal(t, 1, tomb, "the key is destroyed, its tombstone kept")

	tr := in.do("GET", "/api/v1/rm/traces/"+ids[1], key, nil)
	require.Equal(t, http.StatusOK, tr.Status)
	require.Contains(t, string(tr.Body), kept, "the other trace still reads")
	require.Contains(t, string(tr.Body), "Customer "+kept, "and its comment")

	// The next engineer's part (issue 37): what the broker segments and
	// query snapshots hold of the deleted trace.
	for _, dir := range []string{"kafka", "snapshots"} {
		if hits := filesWith(t, filepath.Join(in.dataDir, dir), gone); len(hits) > 0 {
			t.Logf("note: %s still holds the deleted trace's marker in clear: %v", dir, hits)
		}
	}

	requireReplayMatches(t, in)
}

func waitReadModel(t *testing.T, in *instance) {
	require.Eventually(t, func() bool {
		lag, err := readmodel.Lag(context.Background(), in.pool, math.MaxInt32)
		return err == nil && lag == 0
	}, time.Minute, 100*time.Millisecond, "the live read model catches up with the log")
}

// openedPayloads returns the payloads of the instance's events of type typ
// ("" = every type), in log order, opened with its master key: trace and
// account payloads are sealed in the log, so SQL on the events table sees
// only the envelopes. Erased events are left out.
func (in *instance) openedPayloads(t testing.TB, typ string) []map[string]any {
	t.Helper()
	keyFile, blobDir := filepath.Join(in.dataDir, "master_key"), filepath.Join(in.dataDir, "blobs")
	for _, kv := range in.env {
		if v, ok := strings.CutPrefix(kv, "CRITIC_MASTER_KEY_FILE="); ok {
			keyFile = v
		}
		if v, ok := strings.CutPrefix(kv, "BLOB_URL=file://"); ok {
			blobDir = v
		}
	}
	return openedPayloadsIn(t, in.pool, keyFile, blobDir, typ)
}

// openedPayloadsIn is openedPayloads for a deployment of separate
// processes: its database, master key file and local blob directory.
func openedPayloadsIn(t testing.TB, pool *pgxpool.Pool, keyFile, blobDir, typ string) []map[string]any {
	t.Helper()
	ctx := context.Background()
	master, err := keyring.ReadMasterKey(keyFile)
	require.NoError(t, err)
	ring, err := keyring.New(pool, master)
	require.NoError(t, err)
	blobs, err := blob.NewLocal(blobDir)
	require.NoError(t, err)
	store := eventstore.New(pool, blobs, eventstore.WithKeyring(ring))
	rows, err := pool.Query(ctx, "SELECT id::text, stream, owner_id::text, type, payload FROM events WHERE $1 = '' OR type = $1 ORDER BY seq", typ)
	require.NoError(t, err)
	var envs []events.Envelope
	for rows.Next() {
		var e events.Envelope
		require.NoError(t, rows.Scan(&e.ID, &e.Stream, &e.OwnerID, &e.Type, &e.Payload))
		envs = append(envs, e)
	}
	require.NoError(t, rows.Err())
	var out []map[string]any
	for _, e := range envs {
		e, err := store.Open(ctx, e)
		if eventstore.IsErased(err) {
			continue
		}
		require.NoError(t, err)
		var p map[string]any
		require.NoError(t, json.Unmarshal(e.Payload, &p))
		out = append(out, p)
	}
	return out
}

// openedWhere are the opened payloads of type typ whose field equals value.
func (in *instance) openedWhere(t testing.TB, typ, field string, value any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, p := range in.openedPayloads(t, typ) {
		if p[field] == value {
			out = append(out, p)
		}
	}
	return out
}

// pgDump is the whole database as pg_dump writes it (data included).
func pgDump(t *testing.T, in *instance) string {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
	require.NotEmpty(t, bins, "pg_dump")
	out, err := exec.Command(bins[len(bins)-1], "--no-owner", "-d", in.dbURL).Output()
	require.NoError(t, err)
	return string(out)
}

// linesWith lists the lines of text that contain marker.
func linesWith(text, marker string) []string {
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		if strings.Contains(l, marker) {
			out = append(out, l)
		}
	}
	return out
}

// filesLeftWith waits up to 10 s for no file under dir to contain marker
// and returns the files that still do: the query snapshot is shredded by
// its own projection, and its replicas follow, shortly after the read model
// has applied the deletion.
func filesLeftWith(t *testing.T, dir, marker string) []string {
	var hits []string
	for range 100 {
		if hits = filesWith(t, dir, marker); len(hits) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return hits
}

// filesWith lists the files under dir whose bytes contain marker.
func filesWith(t *testing.T, dir, marker string) []string {
	var hits []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil // a file the server is rotating
		}
		if strings.Contains(string(b), marker) {
			hits = append(hits, path)
		}
		return nil
	})
	if !os.IsNotExist(err) {
		require.NoError(t, err)
	}
	return hits
}

// TestRotateMasterKey rotates the master key with the server stopped: the
// old file is kept aside, the new one installed, and the traces stored
// before still read after a restart.
func TestRotateMasterKey(t *testing.T) {
	in := startServe(t)
	key := in.newUser("rotator", false)
	ids := in.importTraces(key, "stash", `{"id":"r1","steps":[{"role":"user","content":"Rotate MARKER-ROT"},{"role":"assistant","content":"Done."}]}`)
	path := filepath.Join(in.dataDir, "master_key")
	old, err := os.ReadFile(path)
	require.NoError(t, err)
	in.stop()

	out, err := in.cli("keys", "rotate")
	require.NoError(t, err, out)
	require.Contains(t, out, "re-wrapped 2 data keys", "the trace's and the account's (its member list is sealed)")
	now, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotEqual(t, old, now, "a new master key is installed")
	kept, err := filepath.Glob(path + ".old-*")
	require.NoError(t, err)
	require.Len(t, kept, 1)
	b, err := os.ReadFile(kept[0])
	require.NoError(t, err)
	require.Equal(t, old, b, "the old key is kept aside")

	in.start()
	r := in.do("GET", "/api/v1/rm/traces/"+ids[0], key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), "MARKER-ROT")
	require.Equal(t, 1, len(in.openedPayloads(t, "trace.imported.v1")), "the log opens with the new key")

	// A process given the old key refuses to start: the database recorded
	// the new key's fingerprint.
	require.NoError(t, os.WriteFile(path+".bad", old, 0o600))
	in.env = append(in.env, "CRITIC_MASTER_KEY_FILE="+path+".bad")
	out, err = in.cli("replay", "readmodel")
	require.Error(t, err, out)
	require.Contains(t, out, "CRITIC_MASTER_KEY_FILE holds a master key other than the one this database's data keys are wrapped with")
	var n int
	require.NoError(t, in.pool.QueryRow(context.Background(), "SELECT count(*) FROM readmodel_applied").Scan(&n))
	require.Positive(t, n, "nothing was replayed under the wrong key")
}

// TestDeletedTracesFindingsAreRedacted: a learning report's findings quote
// their traces (evidence quote, original and alternative actions). A
// finding is sealed with its trace's key, so after DELETE of one trace its
// marker is in neither a pg_dump nor any file of the data directory, the
// learning report still lists the finding, marked erased and without the
// quote, another trace's finding still shows its quote, and a replay of the
// read model equals the live one.
func TestDeletedTracesFindingsAreRedacted(t *testing.T) {
	const gone, kept = "FINDING-GONE-5d1e", "FINDING-KEPT-c07b"
	srv := llmtest.New(t)
	srv.Handle(func(req llmtest.Request) llmtest.Reply {
		if req.SchemaName == "feedback" {
			for _, m := range e2eEvidenceRe.FindAllStringSubmatch(req.Last(), -1) {
				for _, marker := range []string{gone, kept} {
					if strings.Contains(m[2], "wrong order "+marker) {
						return llmtest.JSON(map[string]any{"label": "negative", "confidence": "high", "about": "agent", "evidence_id": m[1],
							"evidence_quote": "wrong order " + marker, "alternative": "Sorted ascending: 1, 2, 3 for " + marker + ".",
							"reason": "the user corrects the order"}).WithUsage(300, 40)
					}
				}
			}
		}
		return scriptedClassifier(req)
	})
	llmEnv := []string{"CRITIC_FEEDBACK_MODEL=openai/scripted-classifier", "CRITIC_FEEDBACK_API_BASE=" + srv.URL, "OPENAI_API_KEY=test-key",
		"CRITIC_FAST_MODEL=openai/scripted-fast", "CRITIC_FAST_API_BASE=" + srv.URL}
	in, kafkaPort := startServeForJobs(t, llmEnv...)
	key := in.newUser("redactor", false)
	base := tinyBase(t, in)
	startWorkerWith(t, in, kafkaPort, "fw1", llmEnv...)
	trace := func(id, marker string) string {
		return `{"id":"` + id + `","steps":[{"role":"user","content":"Sort 3, 1, 2 ascending"},{"role":"assistant","content":"Sorted: 3, 2, 1 for ` + marker + `."},` +
			`{"role":"user","content":"No, that's the wrong order ` + marker + `."}]}`
	}
	ids := in.importTraces(key, "stash", trace("gone", gone)+"\n"+trace("kept", kept))
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "from-feedback", "trace_ids": ids, "base_model": base,
		"training_config": map[string]any{"annotation_source": "feedback", "input_version": 1}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	id := r.JSON(t)["id"].(string)
	in.waitModel(t, key, id, "succeeded", "failed")
	findings := func() map[string]map[string]any {
		out := map[string]map[string]any{}
		m := in.do("GET", "/api/v1/rm/reward-models/"+id, key, nil).JSON(t)
		fb, ok := m["feedback"].([]any)
		require.True(t, ok, "feedback is recorded: %v\n%s", m, in.logText())
		for _, x := range fb {
			if f := x.(map[string]any); f["source"] == "user_feedback" {
				out[f["trace_id"].(string)] = f
			}
		}
		return out
	}
	before := findings()
	require.Equal(t, "wrong order "+gone, before[ids[0]]["evidence_quote"])
	require.Equal(t, false, before[ids[0]]["erased"])
	var clear int
	require.NoError(t, in.pool.QueryRow(context.Background(), "SELECT count(*) FROM events WHERE strpos(payload::text, 'FINDING-') > 0").Scan(&clear))
	require.Zero(t, clear, "findings are sealed in the log")

	r = in.do("DELETE", "/api/v1/rm/traces/"+ids[0], key, nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))
	waitReadModel(t, in)

	after := findings()
	erased := after[ids[0]]
	require.NotNil(t, erased, "the deleted trace's finding stays in the learning report")
	require.Equal(t, true, erased["erased"])
	require.Nil(t, erased["evidence_quote"])
	require.Nil(t, erased["alternative_action"])
	require.Equal(t, "", erased["original_action"])
	require.Equal(t, "negative", erased["label"])
	require.Equal(t, before[ids[0]]["id"], erased["id"])
	require.Equal(t, "wrong order "+kept, after[ids[1]]["evidence_quote"], "the other trace's finding keeps its quote")
	require.Equal(t, false, after[ids[1]]["erased"])

	require.Empty(t, linesWith(pgDump(t, in), gone), "pg_dump holds nothing of the deleted trace's finding")
	require.NotEmpty(t, linesWith(pgDump(t, in), kept), "pg_dump still holds the other trace's finding (read model)")
	require.Empty(t, filesLeftWith(t, in.dataDir, gone), "no file of the data directory holds the deleted trace's marker")
	ps := in.openedWhere(t, events.RewardModelFindingRecorded, "trace_id", ids[0])
	require.Len(t, ps, 1, "the finding's event still opens, redacted")
	require.Equal(t, true, ps[0]["finding"].(map[string]any)["erased"])

	// A finding appended while its trace was being erased (after the
	// deletion, before the key was destroyed: here, stored in clear) is
	// projected redacted, as a replay reads it.
	quote := "wrong order " + gone
	late := events.Finding{ID: "late-finding", TraceID: ids[0], StepIndex: 1, StepID: "s", Label: "negative", Outcome: events.OutcomePair,
		EvidenceQuote: &quote, OriginalAction: "Sorted: 3, 2, 1 for " + gone + "."}
	blobs, err := blob.NewLocal(filepath.Join(in.dataDir, "blobs"))
	require.NoError(t, err)
	_, err = eventstore.New(in.pool, blobs).Append(context.Background(), eventstore.Meta{Actor: "system"}, nil, []events.New{{ID: uuid.NewString(),
		Stream: events.RewardModelStream(id), OwnerID: in.userID("redactor"), Type: events.RewardModelFindingRecorded,
		Payload: events.RewardModelFindingRecordedV1{ModelID: id, Attempt: 1, TraceID: ids[0], TraceRevision: 1, Finding: late}}})
	require.NoError(t, err)
	waitReadModel(t, in)
	var lateRow string
	require.NoError(t, in.pool.QueryRow(context.Background(), "SELECT finding::text FROM rm_model_findings WHERE finding_id = 'late-finding'").Scan(&lateRow))
	require.NotContains(t, lateRow, gone)
	require.Contains(t, lateRow, `"erased": true`)

	requireReplayMatches(t, in)
}
