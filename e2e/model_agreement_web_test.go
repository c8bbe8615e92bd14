package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestModelAgreementWeb runs web/e2e/model-agreement.spec.ts in Chromium
// against the real binary (issue 36): a model's page shows the agreement
// of the labels it was trained on. Seeded here through the API: an admin
// and two reviewers label six traces — two agreed, one disputed and left,
// one disputed and adjudicated, two rated by one member — and a model is
// requested with exclude_disputed; GET /reward-models/{id} gives the exact
// counts the page must show.
func TestModelAgreementWeb(t *testing.T) {
	webDir := requireBrowser(t)

	in := startServe(t)
	admin := in.newUser("agreement-admin", false)
	var lines []string
	for _, name := range []string{"agree-up", "agree-down", "split", "settled", "solo-admin", "solo-bea"} {
		lines = append(lines, `{"title":"Agreement: `+name+`","steps":[{"role":"user","content":"Question `+name+`"},{"role":"assistant","content":"Answer `+name+`"}]}`)
	}
	ids := in.importTraces(admin, "stash", strings.Join(lines, "\n"))
	require.Len(t, ids, 6)
	keys := map[string]string{"admin": admin}
	for _, name := range []string{"Bea", "Cy"} {
		r := in.do("POST", "/api/v1/rm/members", admin, map[string]any{"name": name, "role": "reviewer"})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
		var added struct {
			APIKey string `json:"api_key"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &added))
		keys[name] = added.APIKey
	}
	for i, by := range []map[string]int{
		{"admin": 1, "Bea": 1}, {"admin": -1, "Bea": -1}, {"admin": 1, "Bea": -1},
		{"admin": -1, "Bea": 1, "Cy": 1}, {"admin": 1}, {"Bea": -1},
	} {
		for who, v := range by {
			r := in.do("POST", "/api/v1/rm/traces/"+ids[i]+"/annotations", keys[who], map[string]any{"rating": v})
			require.Less(t, r.Status, 300, string(r.Body))
		}
	}
	r := in.do("POST", "/api/v1/rm/traces/"+ids[3]+"/adjudications", admin, map[string]any{"rating": 1, "reason": "the answer cites the policy"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Body))
	r = in.do("POST", "/api/v1/rm/reward-models", admin, map[string]any{"name": "agreed only", "trace_ids": ids,
		"training_config": map[string]any{"annotation_source": "explicit", "exclude_disputed": true}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	id := r.JSON(t)["id"].(string)

	// The dataset is built in the background; its agreement comes with it.
	var agreement json.RawMessage
	for deadline := time.Now().Add(2 * time.Minute); ; {
		r = in.do("GET", "/api/v1/rm/reward-models/"+id, admin, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		var m struct {
			Agreement json.RawMessage `json:"agreement"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &m))
		if string(m.Agreement) != "null" {
			agreement = m.Agreement
			break
		}
		require.True(t, time.Now().Before(deadline), "no agreement recorded:\n%s\n%s", r.Body, in.logText())
		time.Sleep(200 * time.Millisecond)
	}
	var a struct {
		Judged, CoRated, Disputed, Adjudicated, Excluded int
	}
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(agreement, &raw))
	for k, dst := range map[string]*int{"judged": &a.Judged, "co_rated": &a.CoRated, "disputed": &a.Disputed, "adjudicated": &a.Adjudicated, "excluded": &a.Excluded} {
		require.NoError(t, json.Unmarshal(raw[k], dst), k)
	}
	require.Equal(t, struct{ Judged, CoRated, Disputed, Adjudicated, Excluded int }{6, 4, 2, 1, 1}, a, string(agreement))

	require.Equal(t, 1, runSpec(t, webDir, "model-agreement", "model-agreement.spec.ts", in.url, admin, "CRITIC_E2E_AGREEMENT_MODEL="+id))
}
