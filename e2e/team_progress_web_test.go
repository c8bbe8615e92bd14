package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTeamProgressWeb runs web/e2e/team-progress.spec.ts in Chromium
// against the real binary (issue 36): under overlap 2, Rita rates t1 and t2
// and Rob rates t1 and comments on t3 (seeded here through the API); the
// admin's Team page shows each member's annotations, traces judged and
// remaining, the queue's coverage, and a member's name opens the trace list
// filtered to what they annotated; Rita sees her own row alone.
func TestTeamProgressWeb(t *testing.T) {
	webDir := requireBrowser(t)

	in := startServe(t)
	admin := in.newUser("progress-admin", false)
	var lines []string
	for _, n := range []string{"t1", "t2", "t3"} {
		lines = append(lines, `{"title":"Progress: `+n+`","steps":[{"role":"user","content":"Question `+n+`"},{"role":"assistant","content":"Answer `+n+`"}]}`)
	}
	ids := in.importTraces(admin, "stash", strings.Join(lines, "\n"))
	require.Len(t, ids, 3)
	keys := map[string]string{}
	for _, m := range [][2]string{{"Rita", "reviewer"}, {"Rob", "reviewer"}, {"Vic", "viewer"}} {
		r := in.do("POST", "/api/v1/rm/members", admin, map[string]any{"name": m[0], "role": m[1]})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		var added struct {
			APIKey string `json:"api_key"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &added))
		keys[m[0]] = added.APIKey
	}
	r := in.do("PUT", "/api/v1/rm/review-overlap", admin, map[string]any{"overlap": 2})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	for _, a := range []struct {
		who   string
		trace int
		body  map[string]any
	}{{"Rita", 0, map[string]any{"rating": 1}}, {"Rita", 1, map[string]any{"rating": -1}},
		{"Rob", 0, map[string]any{"rating": -1}}, {"Rob", 2, map[string]any{"comment": "too slow"}}} {
		r := in.do("POST", "/api/v1/rm/traces/"+ids[a.trace]+"/annotations", keys[a.who], a.body)
		require.Less(t, r.Status, 300, string(r.Body))
	}

	require.Greater(t, runSpec(t, webDir, "team progress", "team-progress.spec.ts", in.url, admin, "CRITIC_E2E_RITA_KEY="+keys["Rita"]), 0, "no browser test ran")
}
