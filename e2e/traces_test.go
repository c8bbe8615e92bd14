package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/projections/readmodel"
)

const refundTrace = `{"id":"refund-1182","title":"Refund request for order 1182","metadata":{"agent":"support-bot"},"steps":[` +
	`{"role":"system","content":"You are a support agent."},` +
	`{"role":"user","content":"I want a refund for order 1182","metadata":{"timestamp":"2026-09-29T03:12:00Z"}},` +
	`{"role":"assistant","content":"","tool_name":"lookup_order","tool_input":{"order_id":"1182","n":12345678901234567890},"tool_call_id":"call_1"},` +
	`{"role":"tool","content":"{\"status\": \"delivered\"}","tool_name":"lookup_order","tool_call_id":"call_1"},` +
	`{"role":"assistant","content":"Your order was delivered on..."}]}`

type traceDetail struct {
	ID           string            `json:"id"`
	ExternalID   *string           `json:"external_id"`
	Title        string            `json:"title"`
	SourceFormat string            `json:"source_format"`
	SourceID     string            `json:"source_id"`
	StepCount    int               `json:"step_count"`
	Metadata     map[string]any    `json:"metadata"`
	Steps        []map[string]any  `json:"steps"`
	Spans        []any             `json:"spans"`
	Annotations  []any             `json:"annotations"`
	Scores       []any             `json:"scores"`
	ActionScores []any             `json:"action_scores"`
	ScoringRuns  []any             `json:"scoring_runs"`
	LatestScore  *map[string]any   `json:"latest_score"`
	Extra        map[string]string `json:"-"`
}

func (in *instance) getTrace(t testing.TB, key, id string) traceDetail {
	r := in.do("GET", "/api/v1/rm/traces/"+id, key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var d traceDetail
	require.NoError(t, json.Unmarshal(r.Body, &d))
	return d
}

func TestTraceLifecycleThroughTheAPI(t *testing.T) {
	in := startServe(t, "CRITIC_MAX_BODY_BYTES=2000000")
	alice := in.newUser("alice", false)
	bob := in.newUser("bob", false)
	aliceRO, err := in.cli("users", "issue-key", "--name", "alice", "--read-only-key")
	require.NoError(t, err, aliceRO)
	roKey := keyRe.FindStringSubmatch(aliceRO)[1]

	// Import, then read back what was written (read-your-writes: no sleep).
	ids := in.importTraces(alice, "stash", refundTrace+"\n"+`{"steps":[{"role":"user","content":"hello\nsecond line"},{"role":"assistant","content":"hi"}]}`)
	require.Len(t, ids, 2)
	d := in.getTrace(t, alice, ids[0])
	require.Equal(t, "Refund request for order 1182", d.Title)
	require.Equal(t, "refund-1182", *d.ExternalID)
	require.Equal(t, "stash", d.SourceFormat)
	require.Equal(t, "support-bot", d.SourceID, "source falls back to metadata.agent")
	require.Equal(t, 5, d.StepCount)
	require.Len(t, d.Steps, 5)
	require.Equal(t, "lookup_order", d.Steps[2]["tool_name"])
	require.Equal(t, "call_1", d.Steps[3]["tool_call_id"])
	require.Equal(t, map[string]any{"timestamp": "2026-09-29T03:12:00Z"}, d.Steps[1]["metadata"])
	require.Equal(t, float64(2), d.Steps[2]["index"])
	require.Empty(t, d.Spans)
	require.NotNil(t, d.Annotations)
	require.Nil(t, d.LatestScore)
	// A large integer in tool input survives exactly.
	raw := in.do("GET", "/api/v1/rm/traces/"+ids[0], alice, nil)
	require.Contains(t, string(raw.Body), `12345678901234567890`)

	untitled := in.getTrace(t, alice, ids[1])
	require.Equal(t, "hello", untitled.Title, "deterministic title from the first user message's first line")
	require.Nil(t, untitled.ExternalID)

	list := in.do("GET", "/api/v1/rm/traces?limit=1", alice, nil)
	require.Equal(t, http.StatusOK, list.Status)
	lj := list.JSON(t)
	require.Equal(t, float64(2), lj["total"])
	require.Len(t, lj["traces"], 1)
	require.Equal(t, ids[1], lj["traces"].([]any)[0].(map[string]any)["id"], "newest first")
	for _, k := range []string{"id", "external_id", "title", "source_format", "step_count", "positive_count", "negative_count",
		"comment_count", "label_error_count", "created_at", "latest_score", "source_id", "source_name", "source_owner_id"} {
		require.Contains(t, lj["traces"].([]any)[0], k)
	}

	// Another owner sees nothing of alice's, and gets 404, never 403.
	require.Equal(t, http.StatusNotFound, in.do("GET", "/api/v1/rm/traces/"+ids[0], bob, nil).Status)
	require.Equal(t, http.StatusNotFound, in.do("DELETE", "/api/v1/rm/traces/"+ids[0], bob, nil).Status)
	require.Equal(t, float64(0), in.do("GET", "/api/v1/rm/traces", bob, nil).JSON(t)["total"])

	// Read-only keys read but cannot write.
	require.Equal(t, http.StatusOK, in.do("GET", "/api/v1/rm/traces/"+ids[0], roKey, nil).Status)
	require.Equal(t, http.StatusForbidden, in.do("POST", "/api/v1/rm/traces/import", roKey, map[string]any{"format": "stash", "data": refundTrace}).Status)
	require.Equal(t, http.StatusForbidden, in.do("DELETE", "/api/v1/rm/traces/"+ids[0], roKey, nil).Status)

	// Re-importing the same id replaces the steps as a new revision.
	oldStepID := d.Steps[1]["id"]
	again := in.importTraces(alice, "stash", strings.Replace(refundTrace, "delivered on...", "delivered on Monday.", 1))
	require.Equal(t, ids[0], again[0])
	d2 := in.getTrace(t, alice, ids[0])
	require.Equal(t, "Your order was delivered on Monday.", d2.Steps[4]["content"])
	require.Equal(t, oldStepID, d2.Steps[1]["id"], "an unchanged step keeps its id")
	require.NotEqual(t, d.Steps[4]["id"], d2.Steps[4]["id"], "the changed step is new")
	var revisions int
	require.NoError(t, in.pool.QueryRow(context.Background(), "SELECT revision FROM rm_traces WHERE id = $1", ids[0]).Scan(&revisions))
	require.Equal(t, 2, revisions)

	// Export re-imports to identical traces (into another account).
	exp := in.do("GET", "/api/v1/rm/export/traces", alice, nil)
	require.Equal(t, http.StatusOK, exp.Status)
	require.Equal(t, 2, strings.Count(string(exp.Body), "\n"))
	carolKey := in.newUser("carol", false)
	carolIDs := in.importTraces(carolKey, "stash", string(exp.Body))
	require.Len(t, carolIDs, 2)
	exp2 := in.do("GET", "/api/v1/rm/export/traces", carolKey, nil)
	// A trace without an external id is exported under its trace id, which
	// becomes the re-imported trace's external id: both exports name it alike.
	require.Equal(t, sortedLines(exp.Body, ids), sortedLines(exp2.Body, ids), "the export of the re-import equals the original export")

	// Delete is an event; the trace is gone from reads.
	before := in.eventCount()
	require.Equal(t, http.StatusNoContent, in.do("DELETE", "/api/v1/rm/traces/"+ids[1], alice, nil).Status)
	require.Equal(t, http.StatusNotFound, in.do("GET", "/api/v1/rm/traces/"+ids[1], alice, nil).Status)
	require.Equal(t, before+2, in.eventCount())
	var types []string
	rows, err := in.pool.Query(context.Background(), "SELECT type FROM events ORDER BY seq DESC LIMIT 2")
	require.NoError(t, err)
	for rows.Next() {
		var typ string
		require.NoError(t, rows.Scan(&typ))
		types = append(types, typ)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"trace.erased.v1", "trace.deleted.v1"}, types, "deleted, then erased (its key destroyed)")
	require.Equal(t, http.StatusNotFound, in.do("DELETE", "/api/v1/rm/traces/"+ids[1], alice, nil).Status)

	// Formats are listed.
	fr := in.do("GET", "/api/v1/rm/formats", alice, nil)
	require.Equal(t, http.StatusOK, fr.Status)
	var formats []map[string]string
	require.NoError(t, json.Unmarshal(fr.Body, &formats))
	names := []string{}
	for _, f := range formats {
		require.NotEmpty(t, f["description"])
		names = append(names, f["name"])
	}
	require.Subset(t, names, []string{"stash", "auto"})

	// Disabling reward models hides every route (404) and keeps the data.
	out, err := in.cli("users", "disable-reward-models", "alice")
	require.NoError(t, err, out)
	require.Equal(t, http.StatusNotFound, in.do("GET", "/api/v1/rm/traces", alice, nil).Status)
	require.Equal(t, http.StatusNotFound, in.do("GET", "/api/v1/rm/formats", alice, nil).Status)
	require.Equal(t, http.StatusNotFound, in.do("POST", "/api/v1/rm/traces/import", alice, map[string]any{"format": "stash", "data": refundTrace}).Status)
	out, err = in.cli("users", "enable-reward-models", "alice")
	require.NoError(t, err, out)
	require.Equal(t, float64(1), in.do("GET", "/api/v1/rm/traces", alice, nil).JSON(t)["total"])

	t.Run("bad input leaves the events table unchanged", func(t *testing.T) {
		longData := strings.Repeat("x", 2_100_000)
		cases := []struct {
			name   string
			key    string
			body   any
			status int
			detail string
			line   float64
			field  string
		}{
			{"malformed JSON on line 2", alice, map[string]any{"format": "stash", "data": refundTrace + "\n{\"steps\": [}"}, 422, "malformed JSON", 2, ""},
			{"unknown format", alice, map[string]any{"format": "csv", "data": refundTrace}, 422, `unknown format "csv"`, 0, "format"},
			{"only system steps", alice, map[string]any{"format": "stash", "data": `{"steps":[{"role":"system","content":"x"}]}`}, 422, "only system steps", 1, "steps"},
			{"unknown role", alice, map[string]any{"format": "stash", "data": refundTrace + "\n" + `{"steps":[{"role":"robot","content":"x"}]}`}, 422, `unknown role "robot"`, 2, "steps[0].role"},
			{"non-string content", alice, map[string]any{"format": "stash", "data": `{"steps":[{"role":"user","content":{"a":1}}]}`}, 422, "content must be a string", 1, "steps[0].content"},
			{"tool result without a call", alice, map[string]any{"format": "stash", "data": `{"steps":[{"role":"user","content":"x"},{"role":"tool","content":"r","tool_call_id":"nope"}]}`}, 422, `"nope" matches no earlier tool call`, 1, "steps[1].tool_call_id"},
			{"unknown request field", alice, map[string]any{"format": "stash", "data": refundTrace, "compute": "modal"}, 422, "unknown field compute", 0, "compute"},
			{"auto detects nothing", alice, map[string]any{"format": "auto", "data": "just some text"}, 422, "tried stash", 0, "data"},
			{"body over the limit", alice, map[string]any{"format": "stash", "data": longData}, 413, "exceeds the limit", 0, ""},
			{"missing key", "", map[string]any{"format": "stash", "data": refundTrace}, 401, "missing API key", 0, ""},
			{"wrong key", "critic_not-a-key", map[string]any{"format": "stash", "data": refundTrace}, 401, "invalid API key", 0, ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				before := in.eventCount()
				r := in.do("POST", "/api/v1/rm/traces/import", c.key, c.body)
				require.Equal(t, c.status, r.Status, string(r.Body))
				body := r.JSON(t)
				require.Contains(t, body["detail"], c.detail)
				if c.line > 0 {
					require.Equal(t, c.line, body["line"])
				}
				if c.field != "" {
					require.Equal(t, c.field, body["field"])
				}
				require.Equal(t, before, in.eventCount(), "nothing stored")
			})
		}
	})

	t.Run("replay rebuilds identical read-model tables", func(t *testing.T) {
		before := dumpReadModel(t, in)
		out, err := in.cli("replay", "readmodel")
		require.NoError(t, err, out)
		require.Contains(t, out, "read model rebuilt from")
		require.Equal(t, before, dumpReadModel(t, in))
	})
}

// sortedLines returns the JSONL lines with each trace's own id replaced by its
// position, so exports of two accounts compare.
func sortedLines(body []byte, ids []string) []string {
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	for i, l := range lines {
		for j, id := range ids {
			l = strings.ReplaceAll(l, id, fmt.Sprintf("trace-%d", j))
		}
		lines[i] = l
	}
	sort.Strings(lines)
	return lines
}

// dumpReadModel renders every read-model table (readmodel.Tables, so a new
// table is compared without anyone remembering to add it), ordered, as text.
func dumpReadModel(t *testing.T, in *instance) map[string][]string {
	out := map[string][]string{}
	for _, table := range readmodel.Tables {
		rows, err := in.pool.Query(context.Background(), "SELECT row_to_json(x)::text FROM "+table+" x ORDER BY 1")
		require.NoError(t, err)
		var lines []string
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			lines = append(lines, s)
		}
		rows.Close()
		require.NoError(t, rows.Err())
		out[table] = lines
	}
	require.NotEmpty(t, out["rm_steps"])
	return out
}

// requireReplayMatches rebuilds the read model from the log (critic replay
// readmodel) and requires every table, and whatever extra dumps, to be what
// the live projection wrote. A worker or scheduler may still append while
// it runs (a title, a scoring run, a finding), and a dump taken before such
// an event cannot equal one taken after it: the comparison counts only when
// the log did not move from the live dump to the replayed one, else it is
// taken again (a real divergence fails every time).
func requireReplayMatches(t *testing.T, in *instance, extra ...func() any) {
	t.Helper()
	position := func() string {
		var n, head int64
		require.NoError(t, in.pool.QueryRow(context.Background(), "SELECT count(*), COALESCE(max(seq), 0) FROM events").Scan(&n, &head))
		return fmt.Sprint(n, "/", head)
	}
	dumps := func() (map[string][]string, []any) {
		var xs []any
		for _, f := range extra {
			xs = append(xs, f())
		}
		return dumpReadModel(t, in), xs
	}
	for attempt := 1; ; attempt++ {
		at := position()
		waitReadModel(t, in)
		live, liveExtra := dumps()
		out, err := in.cli("replay", "readmodel")
		require.NoError(t, err, out)
		replayed, replayedExtra := dumps()
		if moved := position() != at; moved && attempt < 5 {
			continue
		}
		for table := range live {
			require.Equal(t, live[table], replayed[table], "table %s after replay", table)
		}
		require.Equal(t, liveExtra, replayedExtra, "extra dumps after replay")
		return
	}
}
