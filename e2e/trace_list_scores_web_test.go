package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTraceListScoresWeb runs web/e2e/trace-list-scores.spec.ts in Chromium
// against the real binary (issue 35): the list's score columns sorted by a
// mouse click on their headers (order shown, unscored last, the sort kept
// in the address across a reload), the outcome and "Credit ≤ 0" filters,
// and the 390 px layout. The account is seedScoredList's.
func TestTraceListScoresWeb(t *testing.T) {
	webDir := requireBrowser(t)
	in := startServe(t)
	s := seedScoredList(t, in)
	require.Greater(t, runSpec(t, webDir, "trace list scores", "trace-list-scores.spec.ts", in.url, s.key, "CRITIC_E2E_LIST_SCORES=1"), 0, "no browser test ran")
}
