package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRetentionWeb runs web/e2e/retention.spec.ts in Chromium against the
// real binary (issue 37): the admin types a retention period on the Team
// page, sees the dry-run count before saving, saves it and turns it off; a
// reviewer sees no Retention section. What the spec did is checked through
// the API, there and here.
func TestRetentionWeb(t *testing.T) {
	webDir := requireBrowser(t)
	in := startServe(t)
	admin := in.newUser("retention-admin", false)
	in.importTraces(admin, "stash", retentionTrace("w1", "RET-WEB-1"))
	added := in.do("POST", "/api/v1/rm/members", admin, map[string]any{"name": "Rex", "role": "reviewer"})
	require.Equal(t, http.StatusCreated, added.Status, string(added.Body))
	reviewer, _ := added.JSON(t)["api_key"].(string)
	require.NotEmpty(t, reviewer)

	require.Greater(t, runSpec(t, webDir, "retention", "retention.spec.ts", in.url, admin, "CRITIC_E2E_REVIEWER_KEY="+reviewer), 0, "no browser test ran")
	r := in.do("GET", "/api/v1/rm/retention", admin, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Nil(t, r.JSON(t)["days"], "the spec turned retention off at the end")
	var sets int
	require.NoError(t, in.pool.QueryRow(t.Context(), "SELECT count(*) FROM events WHERE type = 'user.retention_set.v1'").Scan(&sets))
	require.Equal(t, 2, sets, "saved once, turned off once")
}
