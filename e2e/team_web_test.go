package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTeamWeb runs web/e2e/team.spec.ts in Chromium against the real binary
// (issue 36): the admin invites a reviewer on the Team page with the mouse
// and keyboard, the reviewer signs in with the one-time link in a fresh
// browser context, sees no import, train or SQL control and rates a step;
// the admin then sees both members' ratings in the viewer and the agreement
// figures on the Team page, and settles a disputed target. What the spec
// did is checked through the API.
//
// Seeded here through the API: a second reviewer, Bea, who co-rates twelve
// traces with the admin (ten alike, two not), so the account's alpha rests
// on more than min_sample (10) targets and shows a number, and the admin's
// rating of step 2 of the trace the reviewer will rate.
func TestTeamWeb(t *testing.T) {
	webDir := requireBrowser(t)

	in := startServe(t)
	admin := in.newUser("team-admin", false)
	lines := []string{`{"title":"Team: refund request","steps":[{"role":"user","content":"Refund order 7731."},{"role":"assistant","content":"Refunded order 7731."}]}`}
	for i := 1; i <= 12; i++ {
		lines = append(lines, fmt.Sprintf(`{"title":"Team: co-rated %d","steps":[{"role":"user","content":"Question %d"},{"role":"assistant","content":"Answer %d"}]}`, i, i, i))
	}
	ids := in.importTraces(admin, "stash", strings.Join(lines, "\n"))
	require.Len(t, ids, 13)

	added := in.do("POST", "/api/v1/rm/members", admin, map[string]any{"name": "Bea", "role": "reviewer"})
	require.Equal(t, http.StatusCreated, added.Status, string(added.Body))
	var bea struct {
		APIKey string `json:"api_key"`
	}
	require.NoError(t, json.Unmarshal(added.Body, &bea))

	rate := func(key, trace string, body map[string]any) {
		t.Helper()
		r := in.do("POST", "/api/v1/rm/traces/"+trace+"/annotations", key, body)
		require.Less(t, r.Status, 300, string(r.Body))
	}
	for i, id := range ids[1:] {
		rate(admin, id, map[string]any{"rating": 1})
		v := 1
		if i >= 10 {
			v = -1
		}
		rate(bea.APIKey, id, map[string]any{"rating": v})
	}
	// A binary criterion both judge on four traces, apart on one: the Team
	// page's alpha per criterion is 8/15 (worked in
	// usecase.TestAgreementPerCriterion) over 4 targets, too few to trust.
	crit := in.do("POST", "/api/v1/rm/criteria", admin, map[string]any{"name": "Grounded", "kind": "binary", "applies_to": "trace"})
	require.Equal(t, http.StatusCreated, crit.Status, string(crit.Body))
	var grounded struct {
		ID string `json:"criterion_id"`
	}
	require.NoError(t, json.Unmarshal(crit.Body, &grounded))
	for i, v := range [][2]string{{"yes", "yes"}, {"yes", "no"}, {"no", "no"}, {"no", "no"}} {
		rate(admin, ids[1+i], map[string]any{"criterion_id": grounded.ID, "value": v[0]})
		rate(bea.APIKey, ids[1+i], map[string]any{"criterion_id": grounded.ID, "value": v[1]})
	}
	var tr struct {
		Steps []struct {
			ID string `json:"id"`
		} `json:"steps"`
	}
	got := in.do("GET", "/api/v1/rm/traces/"+ids[0], admin, nil)
	require.Equal(t, http.StatusOK, got.Status, string(got.Body))
	require.NoError(t, json.Unmarshal(got.Body, &tr))
	require.Len(t, tr.Steps, 2)
	rate(admin, ids[0], map[string]any{"step_id": tr.Steps[1].ID, "rating": 1})

	require.Greater(t, runSpec(t, webDir, "team", "team.spec.ts", in.url, admin, "CRITIC_E2E_TEAM_TRACE="+ids[0]), 0, "no browser test ran")
}
