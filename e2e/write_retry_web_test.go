package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWebWriteRetries: the web app sends every write with an
// Idempotency-Key and sends it again while the server is briefly
// unavailable (web/e2e/write-retry.spec.ts answers the first POST 503, or
// drops the connection after the server stored it, or keeps answering 503).
// The event log holds each of the reviewer's writes exactly once, and
// nothing of the one the app gave up on.
func TestWebWriteRetries(t *testing.T) {
	webDir := requireBrowser(t)
	in := startServe(t)
	key := in.newUser("retrier", false)
	trace := in.importTraces(key, "stash",
		`{"title":"Retry me","steps":[{"role":"user","content":"Please refund order 7."},{"role":"assistant","content":"Refunded order 7."}]}`)[0]
	require.Equal(t, 3, runSpec(t, webDir, "write retries", "write-retry.spec.ts", in.url, key, "CRITIC_E2E_RETRY_TRACE="+trace))

	var added int
	require.NoError(t, in.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM events WHERE type = 'annotation.added.v1' AND stream = 'trace/' || $1`, trace).Scan(&added))
	require.Equal(t, 2, added, "the comment and the rating, each once; nothing of the write the app gave up on")
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
