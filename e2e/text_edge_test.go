package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/projections/readmodel"
)

// TestNULInALargeImportIsRefusedAndTheAccountKeepsWorking: a trace over
// 512 KiB is stored as a claim-checked blob, which bypasses jsonb's refusal
// of U+0000; a NUL in one of its steps used to be stored, then park the
// read model on it and answer every later write of the account with 503
// projection_parked. Now the edge refuses it with 422 naming the line and
// the field, nothing is stored, and the account goes on as before.
func TestNULInALargeImportIsRefusedAndTheAccountKeepsWorking(t *testing.T) {
	in := startServe(t)
	key := in.newUser("nul", false)
	before := in.userEvents("nul")

	line, err := json.Marshal(map[string]any{"id": "big", "steps": []any{
		map[string]any{"role": "user", "content": "read the file"},
		map[string]any{"role": "assistant", "content": strings.Repeat("binary file contents ", 30_000) + "\x00\x01 after the NUL"},
	}})
	require.NoError(t, err)
	require.Greater(t, len(line), 512<<10, "the trace must be claim-checked")
	r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": "stash", "data": string(line)})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Body))
	body := r.JSON(t)
	require.Equal(t, "steps[1].content", body["field"])
	require.Equal(t, float64(1), body["line"])
	require.Contains(t, body["detail"], "U+0000")
	require.Equal(t, before, in.userEvents("nul"), "nothing of a refused import is stored")

	// The account keeps working: imports, reads, annotations.
	ids := in.importTraces(key, "stash", `{"id":"ok","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`)
	require.Equal(t, "q", in.getTrace(t, key, ids[0]).Steps[0]["content"])
	r = in.do("POST", "/api/v1/rm/traces/"+ids[0]+"/annotations", key, map[string]any{"comment": "fine"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
}

// TestOTLPSpanWithNULIsRejectedAndTheAccountKeepsWorking is the same hole
// through the live receiver: a tool result that read a binary file, over
// 512 KiB, in a span. Its trace is rejected in partial_success (an exporter
// drops a whole batch on a 400), naming U+0000; nothing of it is stored,
// and the account's next spans are received and shown.
func TestOTLPSpanWithNULIsRejectedAndTheAccountKeepsWorking(t *testing.T) {
	in := startServe(t)
	key := in.newUser("otlp", false)
	before := in.userEvents("otlp")
	call := `[{"role":"user","parts":[{"type":"text","content":"cat the file"}]}]`
	binary, err := json.Marshal(strings.Repeat("binary file contents ", 30_000) + "\x00 after the NUL")
	require.NoError(t, err)
	out := `[{"role":"assistant","parts":[{"type":"text","content":` + string(binary) + `}]}]`
	for _, c := range []struct{ name, trace, input, output string }{
		{"NUL in the messages", "0102030405060708090a0b0c0d0e0f11", call, out},
		{"NUL in the attribute", "0102030405060708090a0b0c0d0e0f12", call + "\x00", `[]`},
	} {
		r := postOTLP(t, in, key, "application/json", "", otlpJSON(c.trace, "00000000000000aa", c.input, c.output))
		require.Equal(t, http.StatusOK, r.Status, c.name+": "+string(r.Body))
		ps, _ := r.JSON(t)["partialSuccess"].(map[string]any)
		require.NotNil(t, ps, c.name+": "+string(r.Body))
		require.Equal(t, "1", fmt.Sprint(ps["rejectedSpans"]), c.name)
		require.Contains(t, ps["errorMessage"], "U+0000", c.name)
	}
	require.Equal(t, before, in.userEvents("otlp"), "nothing of the rejected traces is stored")

	r := postOTLP(t, in, key, "application/json", "", otlpJSON("0102030405060708090a0b0c0d0e0f13", "00000000000000ab", call,
		`[{"role":"assistant","parts":[{"type":"text","content":"it is text"}]}]`))
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	in.eventually("the good trace to be listed", func() bool {
		r := in.do("GET", "/api/v1/rm/traces", key, nil)
		return r.Status == http.StatusOK && r.JSON(t)["total"] == float64(1)
	})
}

// TestOutsideTextIsRefusedWith422NamingTheField: U+0000 and invalid UTF-8
// anywhere a client can put text — titles, comments, source and model
// names, ids in paths, query parameters, import content — used to answer
// 500 (or park the account); each is now 422 naming the field, and the
// Connect API answers invalid_argument the same way.
func TestOutsideTextIsRefusedWith422NamingTheField(t *testing.T) {
	in := startServe(t)
	key := in.newUser("texts", false)
	traceID := in.importTraces(key, "stash", `{"id":"t1","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`)[0]
	r := in.do("POST", "/api/v1/rm/traces/"+traceID+"/annotations", key, map[string]any{"comment": "first"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	annotationID, _ := r.JSON(t)["id"].(string)
	require.NotEmpty(t, annotationID, string(r.Body))
	importOf := func(line string) map[string]any { return map[string]any{"format": "stash", "data": line} }

	for _, c := range []struct {
		name, method, path string
		body               any
		field, detail      string
	}{
		{"import title", "POST", "/api/v1/rm/traces/import", importOf(`{"id":"x","title":"a\u0000b","steps":[{"role":"user","content":"q"}]}`), "title", "U+0000"},
		{"import content", "POST", "/api/v1/rm/traces/import", importOf(`{"id":"x","steps":[{"role":"user","content":"q\u0000"}]}`), "steps[0].content", "U+0000"},
		{"import id", "POST", "/api/v1/rm/traces/import", importOf(`{"id":"x\u0000","steps":[{"role":"user","content":"q"}]}`), "id", "U+0000"},
		{"import tool input", "POST", "/api/v1/rm/traces/import", importOf(`{"id":"x","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_name":"read","tool_input":{"path":"\u0000"},"tool_call_id":"c"}]}`), "steps[1].tool_input.path", "U+0000"},
		{"import body bytes", "POST", "/api/v1/rm/traces/import", []byte("{\"format\":\"stash\",\"data\":\"{\\\"id\\\":\\\"x\\\",\\\"steps\\\":[{\\\"role\\\":\\\"user\\\",\\\"content\\\":\\\"\xff\\\"}]}\"}"), "data", "valid UTF-8"},
		{"comment NUL", "POST", "/api/v1/rm/traces/" + traceID + "/annotations", map[string]any{"comment": "bad\x00"}, "comment", "U+0000"},
		{"comment invalid UTF-8", "POST", "/api/v1/rm/traces/" + traceID + "/annotations", []byte("{\"comment\":\"bad \xc3\x28\"}"), "comment", "not valid UTF-8"},
		{"comment edit", "PATCH", "/api/v1/rm/annotations/" + annotationID, map[string]any{"comment": "\x00"}, "comment", "U+0000"},
		{"10 MB comment", "POST", "/api/v1/rm/traces/" + traceID + "/annotations", map[string]any{"comment": strings.Repeat("long ", 2_000_000)}, "comment", "over the limit of 65536 bytes"},
		{"source name", "PUT", "/api/v1/rm/trace-sources", map[string]any{"source_id": "s", "name": "n\x00"}, "name", "U+0000"},
		{"source id", "PUT", "/api/v1/rm/trace-sources", map[string]any{"source_id": "s\x00", "name": "n"}, "source_id", "U+0000"},
		{"model name", "POST", "/api/v1/rm/reward-models", map[string]any{"name": "m\x00", "trace_ids": []string{traceID}}, "name", "U+0000"},
		{"GEPA model", "POST", "/api/v1/rm/gepa-runs", map[string]any{"reward_model_id": uuid.NewString(), "task_model": "openai/x\x00"}, "task_model", "U+0000"},
		{"path id NUL", "GET", "/api/v1/rm/traces/%00", nil, "trace_id", "U+0000"},
		{"path id invalid UTF-8", "GET", "/api/v1/rm/traces/%ff", nil, "trace_id", "not valid UTF-8"},
		{"annotation path id", "DELETE", "/api/v1/rm/annotations/a%00", nil, "annotation_id", "U+0000"},
		{"model path id", "GET", "/api/v1/rm/reward-models/%c3%28", nil, "model_id", "not valid UTF-8"},
		{"query parameter invalid UTF-8", "GET", "/api/v1/rm/traces?q=%ff", nil, "q", "not valid UTF-8"},
		{"query parameter NUL", "GET", "/api/v1/rm/traces?source_id=%00", nil, "source_id", "U+0000"},
		{"query parameter of the review queue", "GET", "/api/v1/rm/review-queue?reward_model_id=%ff", nil, "reward_model_id", "not valid UTF-8"},
		{"query parameter of an export", "GET", "/api/v1/rm/export/traces?source_id=%ff", nil, "source_id", "not valid UTF-8"},
		{"query parameter name", "GET", "/api/v1/rm/traces?%ff=1", nil, "query", "not valid UTF-8"},
		{"undecodable query", "GET", "/api/v1/rm/traces?q=%zz", nil, "query", "cannot be decoded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := in.userEvents("texts")
			r := in.do(c.method, c.path, key, c.body)
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Body))
			body := r.JSON(t)
			require.Equal(t, c.field, body["field"], string(r.Body))
			require.Contains(t, body["detail"], c.detail)
			require.Equal(t, before, in.userEvents("texts"), "nothing stored")
		})
	}

	// Connect: the same rule at its edge, invalid_argument naming the field.
	for _, c := range []struct {
		name, path string
		body       map[string]any
		field      string
	}{
		{"trace id", "/critic.v1.TraceService/GetTrace", map[string]any{"trace_id": "\x00"}, "trace_id"},
		{"comment", "/critic.v1.AnnotationService/AddAnnotation", map[string]any{"trace_id": traceID, "comment": "a\x00"}, "comment"},
		{"quote", "/critic.v1.AnnotationService/AddAnnotation", map[string]any{"trace_id": traceID, "comment": "a",
			"quote": map[string]any{"text": "q\x00"}}, "quote.text"},
		{"source name", "/critic.v1.AnnotationService/RenameTraceSource", map[string]any{"source_id": "s", "name": "\x00"}, "name"},
	} {
		t.Run("connect "+c.name, func(t *testing.T) {
			r := in.do("POST", c.path, key, c.body)
			require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
			body := r.JSON(t)
			require.Equal(t, "invalid_argument", body["code"], string(r.Body))
			require.Contains(t, body["message"], c.field+": ")
			require.Contains(t, body["message"], "U+0000")
		})
	}

	// A comment at the limit is fine.
	r = in.do("POST", "/api/v1/rm/traces/"+traceID+"/annotations", key, map[string]any{"comment": strings.Repeat("x", 64<<10)})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
}

// userEvents counts the events a user's own requests appended (workers
// append titles and scores in the background meanwhile).
func (in *instance) userEvents(name string) int64 {
	var n int64
	require.NoError(in.t, in.pool.QueryRow(context.Background(), "SELECT count(*) FROM events WHERE actor = 'user:' || $1",
		in.userID(name)).Scan(&n))
	return n
}

// unappliableImport appends, straight into the log (the edge now refuses
// such text), a claim-checked trace.imported event of owner whose blob holds
// a step with U+0000: what an import over 512 KiB stored before the edge
// checked text. No read model can ever apply it.
func unappliableImport(t *testing.T, in *instance, owner string) string {
	t.Helper()
	eventID := uuid.Must(uuid.NewV7()).String()
	traceID := uuid.NewString()
	blob, err := json.Marshal(map[string]any{"trace_id": traceID, "title": "binary", "source_format": "stash", "revision": 1,
		"steps": []any{map[string]any{"id": uuid.NewString(), "index": 0, "role": "user", "content": "bytes \x00 here"}}})
	require.NoError(t, err)
	require.Contains(t, string(blob), `\u0000`)
	sum := sha256.Sum256(blob)
	key := "events/" + eventID + ".json"
	path := filepath.Join(in.dataDir, "blobs", filepath.FromSlash(key))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, blob, 0o644))
	cc, err := json.Marshal(map[string]any{"claim_check": map[string]any{"key": key, "sha256": hex.EncodeToString(sum[:]), "size": len(blob)}})
	require.NoError(t, err)
	_, err = in.pool.Exec(context.Background(), `INSERT INTO events (id, stream, version, owner_id, type, actor, payload)
		VALUES ($1, $2, 1, $3, 'trace.imported.v1', 'system', $4)`, eventID, "trace/"+traceID, owner, string(cc))
	require.NoError(t, err)
	return eventID
}

// TestSkipReleasesAnAccountParkedOnAnEventThatCanNeverApply: an event no
// fix can make apply (here a NUL stored before the edge refused it) used to
// hold its account for good — retry fails the same way every time. The
// operator skips it with a reason: the skip is an event in the log, every
// projection passes over the skipped event and applies what it held, the
// account's writes work again, and a replay of the read model equals the
// live one.
func TestSkipReleasesAnAccountParkedOnAnEventThatCanNeverApply(t *testing.T) {
	in := startServe(t)
	alice := in.newUser("alice", false)
	bob := in.newUser("bob", false)
	in.importTraces(alice, "stash", `{"id":"a1","steps":[{"role":"user","content":"first"}]}`)
	in.importTraces(bob, "stash", `{"id":"b1","steps":[{"role":"user","content":"hi"}]}`)

	badID := unappliableImport(t, in, in.userID("alice"))
	parked := func(projection string) bool {
		var n int
		require.NoError(t, in.pool.QueryRow(context.Background(), `SELECT count(*) FROM projection_parked WHERE event_id = $1
			AND (projection = $2 OR starts_with(projection, $2 || '-'))`, badID, projection).Scan(&n))
		return n == 1
	}
	in.eventually("the event to be parked", func() bool { return parked("readmodel") })
	r := in.do("POST", "/api/v1/rm/traces/import", alice, map[string]any{"format": "stash", "data": `{"id":"a2","steps":[{"role":"user","content":"second"}]}`})
	require.Equal(t, http.StatusServiceUnavailable, r.Status, string(r.Body))

	// Retrying cannot help.
	out, err := in.cli("projections", "retry", badID)
	require.Error(t, err, out)
	require.Contains(t, out, "failed again")

	// A skip needs a reason, and only a parked event can be skipped.
	out, err = in.cli("projections", "skip", badID)
	require.Error(t, err, out)
	require.Contains(t, out, "--reason")
	out, err = in.cli("projections", "skip", uuid.NewString(), "--reason", "x")
	require.Error(t, err, out)
	require.Contains(t, out, "not parked")

	// DuckDB stores a NUL, so the query snapshot may have applied the event
	// (then it keeps it until a replay) rather than parked it.
	snapshotParked := parked("snapshot")
	wantQueried := float64(4) // a1, the bad import, the held a2, a3
	if snapshotParked {
		wantQueried = 3
	}
	out, err = in.cli("projections", "skip", badID, "--reason", "a NUL stored before the edge refused it")
	require.NoError(t, err, out)
	require.Contains(t, out, "skipped")
	require.False(t, parked("readmodel"))
	require.False(t, parked("snapshot"))

	// The skip is a fact in the log, with who, what and why.
	var actor, payload string
	require.NoError(t, in.pool.QueryRow(context.Background(), `SELECT actor, payload::text FROM events
		WHERE type = 'projection.event_skipped.v1' AND owner_id = $1`, in.userID("alice")).Scan(&actor, &payload))
	require.Equal(t, "system", actor)
	var p map[string]any
	require.NoError(t, json.Unmarshal([]byte(payload), &p))
	require.Equal(t, badID, p["event_id"])
	require.Equal(t, "trace.imported.v1", p["event_type"])
	require.Equal(t, "a NUL stored before the edge refused it", p["reason"])

	// Alice's held write shows, her next writes work, the query snapshot
	// has caught up too.
	list := in.do("GET", "/api/v1/rm/traces", alice, nil).JSON(t)
	require.Equal(t, float64(2), list["total"], "a1 and the held a2; the skipped import is not there")
	in.importTraces(alice, "stash", `{"id":"a3","steps":[{"role":"user","content":"third"}]}`)
	in.eventually("alice's query snapshot to catch up", func() bool {
		r := in.do("POST", "/api/v1/rm/query", alice, map[string]any{"sql": "SELECT count(*) AS n FROM traces"})
		if r.Status != http.StatusOK {
			return false
		}
		rows, _ := r.JSON(t)["rows"].([]any)
		return len(rows) == 1 && rows[0].([]any)[0] == wantQueried
	})

	// Skipping again is refused (it is no longer parked).
	out, err = in.cli("projections", "skip", badID, "--reason=again")
	require.Error(t, err, out)

	// Replay agrees with the live read model: the skipped event stays out.
	require.Eventually(t, func() bool {
		lag, err := readmodel.Lag(context.Background(), in.pool, math.MaxInt32)
		return err == nil && lag == 0
	}, time.Minute, 100*time.Millisecond)
	live := dumpReadModel(t, in)
	out, err = in.cli("replay", "readmodel")
	require.NoError(t, err, fmt.Sprintf("%s\n%s", out, in.logText()))
	replayed := dumpReadModel(t, in)
	for table := range live {
		require.Equal(t, live[table], replayed[table], "table %s after replay", table)
	}
	require.Equal(t, float64(3), in.do("GET", "/api/v1/rm/traces", alice, nil).JSON(t)["total"])
}
