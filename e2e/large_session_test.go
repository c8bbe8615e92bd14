package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/eventstore"
)

// fileDump is what Claude Code's Read tool returns for a large source file:
// `cat -n` style numbered lines, quotes, tabs, backslashes, non-ASCII text and
// a U+2028 inside a string literal (JSONL readers split on LF only).
func fileDump(turn, size int) string {
	var b strings.Builder
	for line := 1; b.Len() < size; line++ {
		switch line % 7 {
		case 0:
			fmt.Fprintf(&b, "%6d\t\tlog.Printf(\"turn %d: total=%%d coupon=%%q\\n\", total, c.Code)\n", line, turn)
		case 1:
			fmt.Fprintf(&b, "%6d\tfunc applyCoupon%d_%d(items []Item, c Coupon) (int, error) {\n", line, turn, line)
		case 2:
			fmt.Fprintf(&b, "%6d\t\t// Prix réduit — naïve café ✓ 割引 %d\n", line, line)
		case 3:
			fmt.Fprintf(&b, "%6d\t\tif c.Percent > 100 || c.Percent < 0 { return 0, fmt.Errorf(`bad percent %%d`, c.Percent) }\n", line)
		case 4:
			fmt.Fprintf(&b, "%6d\t\tpath := \"C:\\\\shop\\\\cart\\\\%d.go\" // sep\u2028arator\n", line, line)
		case 5:
			fmt.Fprintf(&b, "%6d\t\ttotal := sum(items) - c.Off(items) + shipping(items, c.FreeShipping)\n", line)
		default:
			fmt.Fprintf(&b, "%6d\t}\n", line)
		}
	}
	return b.String()
}

// TestLargeClaudeCodeSessionImports imports a ~50 MB Claude Code session in
// one request under the default 64 MiB body limit and checks nothing is lost:
// every step's content comes back byte for byte, while the events table holds
// only a claim check for the oversized trace.imported payload.
func TestLargeClaudeCodeSessionImports(t *testing.T) {
	if testing.Short() {
		t.Skip("imports a 50 MB session")
	}
	const sessionID = "5e0b9a7c-large-4a1d-8c2e-3f4a5b6c7d8e"
	const turns, dumpSize = 240, 96 << 10
	recs := claudeCodeSession(sessionID, turns, func(turn int) string { return fileDump(turn, dumpSize) })
	// The session opens with a long pasted log, and its last record is the
	// agent's final summary.
	pasted := "Here is the failing CI log — please find the cause:\n" + strings.Repeat("2026-03-14T09:25:01Z ERROR cart: total mismatch \"want\"=2000 \"got\"=1999 path=C:\\shop\\cart \u2029 ünïcödé 🛒\n", 3000)
	first := &wantStep{role: "user", content: pasted, timestamp: "2026-03-14T09:25:58.000Z"}
	recs = append([]sessionRecord{{line: mustJSON(map[string]any{"parentUuid": nil, "isSidechain": false, "userType": "external", "cwd": "/home/dev/shop",
		"sessionId": sessionID, "version": "2.1.14", "gitBranch": "main", "type": "user", "uuid": "0a0a0a0a-0000-4000-8000-000000000000",
		"timestamp": first.timestamp, "message": map[string]any{"role": "user", "content": pasted}}), step: first}}, recs...)
	final := strings.Repeat("All 240 turns are done; every cart test passes. ", 2000)
	last := &wantStep{role: "assistant", content: final, timestamp: "2026-03-14T11:59:59.000Z"}
	recs = append(recs, sessionRecord{line: mustJSON(map[string]any{"parentUuid": nil, "isSidechain": false, "userType": "external", "cwd": "/home/dev/shop",
		"sessionId": sessionID, "version": "2.1.14", "gitBranch": "main", "type": "assistant", "uuid": "0b0b0b0b-0000-4000-8000-000000000000",
		"timestamp": last.timestamp, "message": map[string]any{"model": "claude-sonnet-4-5-20250929", "id": "msg_final", "type": "message", "role": "assistant",
			"content": []any{map[string]any{"type": "text", "text": final}}}}), step: last})
	data := sessionFile(recs)
	want := wantSteps(recs)

	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(map[string]any{"format": "claude_code", "data": data}))
	const defaultLimit = 64 << 20
	require.Greater(t, len(data), 48<<20, "the session is ~50 MB")
	require.Less(t, body.Len(), defaultLimit, "the JSON-escaped request fits the default body limit")
	var contentBytes int
	for _, w := range want {
		contentBytes += len(w.content)
	}
	t.Logf("session: %d records, %.1f MB JSONL, request body %.1f MB (limit 64 MiB), %d steps holding %.1f MB of content",
		len(recs), float64(len(data))/1e6, float64(body.Len())/1e6, len(want), float64(contentBytes)/1e6)

	in := startServe(t) // default CRITIC_MAX_BODY_BYTES
	key := in.newUser("big-session", false)

	start := time.Now()
	r := in.do("POST", "/api/v1/rm/traces/import", key, body.Bytes())
	importDur := time.Since(start)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	var res struct {
		Format   string   `json:"format"`
		Imported int      `json:"imported"`
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &res))
	require.Equal(t, 1, res.Imported)
	id := res.TraceIDs[0]

	var appendedAt time.Time
	require.NoError(t, in.pool.QueryRow(context.Background(), `SELECT recorded_at FROM events WHERE stream = $1 AND type = $2`,
		events.TraceStream(id), events.TraceImported).Scan(&appendedAt))
	reqStart := start

	start = time.Now()
	g := in.do("GET", "/api/v1/rm/traces/"+id, key, nil)
	getDur := time.Since(start)
	require.Equal(t, http.StatusOK, g.Status)
	fmt.Printf("large session: import of %.1f MB (%d steps) took %s end to end (read-your-writes); GET /traces/{id} of %.1f MB took %s\n",
		float64(len(data))/1e6, len(want), importDur.Round(time.Millisecond), float64(len(g.Body))/1e6, getDur.Round(time.Millisecond))
	fmt.Printf("large session: the append transaction began %s after the request was sent; the read model applied it %s later (the handler waits up to 5 s)\n",
		appendedAt.Sub(reqStart).Round(time.Millisecond), reqStart.Add(importDur).Sub(appendedAt).Round(time.Millisecond))

	var d traceDetail
	require.NoError(t, json.Unmarshal(g.Body, &d))
	require.Equal(t, sessionID, *d.ExternalID)
	require.Equal(t, len(want), d.StepCount)
	require.Len(t, d.Steps, len(want), "one step per message block, none lost")
	require.Equal(t, pasted, d.Steps[0]["content"], "first step byte-identical")
	require.Equal(t, final, d.Steps[len(d.Steps)-1]["content"], "last step byte-identical")
	requireSteps(t, want, d.Steps)
	// Claude Code's structured tool result survives too.
	var dumps int
	for i, s := range d.Steps {
		if s["role"] == "tool" && s["tool_name"] == "Read" {
			dumps++
			tur := s["metadata"].(map[string]any)["tool_use_result"].(map[string]any)
			require.Equal(t, want[i].content, tur["file"].(map[string]any)["content"])
		}
	}
	require.Equal(t, turns, dumps)

	// The event row holds only a claim check; the blob it names is the payload.
	ctx := context.Background()
	var rowBytes, size int64
	var sum, blobKey string
	require.NoError(t, in.pool.QueryRow(ctx, `SELECT octet_length(payload::text), payload->'claim_check'->>'sha256',
		payload->'claim_check'->>'key', (payload->'claim_check'->>'size')::bigint FROM events WHERE stream = $1 AND type = $2`,
		events.TraceStream(id), events.TraceImported).Scan(&rowBytes, &sum, &blobKey, &size))
	require.Less(t, rowBytes, int64(1024), "the events row holds a claim check, not the steps")
	require.Len(t, sum, 64)
	// The blob is the sealed payload, compressed before it is encrypted:
	// well past the inline limit, though smaller than the content.
	require.Greater(t, size, int64(eventstore.MaxInlinePayload))
	blobData, err := os.ReadFile(filepath.Join(in.dataDir, "blobs", filepath.FromSlash(blobKey)))
	require.NoError(t, err)
	got := sha256.Sum256(blobData)
	require.Equal(t, sum, hex.EncodeToString(got[:]))
	require.EqualValues(t, size, len(blobData))
	var maxRow int64
	require.NoError(t, in.pool.QueryRow(ctx, `SELECT max(octet_length(payload::text)) FROM events`).Scan(&maxRow))
	require.LessOrEqual(t, maxRow, int64(eventstore.MaxInlinePayload), "no event row exceeds the inline limit")

	// Re-uploading the same 50 MB snapshot is a no-op.
	n := in.eventCount()
	r = in.do("POST", "/api/v1/rm/traces/import", key, body.Bytes())
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, n, in.eventCount())
}
