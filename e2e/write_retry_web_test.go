package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
)

// TestWebWriteRetries: the web app sends every write — POST, PATCH, DELETE
// alike — with an Idempotency-Key and sends it again while the server is
// briefly unavailable (web/e2e/write-retry.spec.ts answers the first POST or
// PATCH 503, or drops the connection after the server stored a POST or a
// DELETE, or keeps answering 503). The event log holds each of the
// reviewer's writes exactly once — the re-rating one edit, the vote taken
// back one removal — and nothing of the one the app gave up on.
func TestWebWriteRetries(t *testing.T) {
	webDir := requireBrowser(t)
	in := startServe(t)
	key := in.newUser("retrier", false)
	trace := in.importTraces(key, "stash",
		`{"title":"Retry me","steps":[{"role":"user","content":"Please refund order 7."},{"role":"assistant","content":"Refunded order 7."},`+
			`{"role":"user","content":"And order 8?"},{"role":"assistant","content":"Refunded order 8 too."}]}`)[0]
	require.Equal(t, 4, runSpec(t, webDir, "write retries", "write-retry.spec.ts", in.url, key, "CRITIC_E2E_RETRY_TRACE="+trace))

	count := func(typ string) int {
		var n int
		require.NoError(t, in.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM events WHERE type = $1 AND stream = 'trace/' || $2`, typ, trace).Scan(&n))
		return n
	}
	require.Equal(t, 3, count(events.AnnotationAdded), "the comment and the two ratings, each once; nothing of the write the app gave up on")
	require.Equal(t, 1, count(events.AnnotationEdited), "the re-rating, once")
	require.Equal(t, 1, count(events.AnnotationRemoved), "the vote taken back, once")
	var comments, ratings []string
	for _, a := range in.getTrace(t, key, trace).Annotations {
		m := a.(map[string]any)
		if c, ok := m["comment"].(string); ok {
			comments = append(comments, c)
		}
		if r, ok := m["rating"].(float64); ok && r == 1 {
			ratings = append(ratings, m["step_id"].(string))
		}
	}
	require.Equal(t, []string{"asked for the order number first"}, comments)
	require.Len(t, ratings, 1)
}
