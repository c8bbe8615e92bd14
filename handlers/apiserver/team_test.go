package apiserver_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTeamReviewOverREST: the team review routes of issue 36 over HTTP as
// a client sees them — the review overlap is read and set (1–10, 422
// naming overlap otherwise); GET /agreement answers every figure with its
// count and too_few (a one-member account has nothing co-rated: alpha
// null); an adjudication needs a reason and comes back 201; GET /disputed
// lists nothing while nobody disagrees; training_config takes
// exclude_disputed and the model shows it. Every body matches the
// published OpenAPI schema.
func TestTeamReviewOverREST(t *testing.T) {
	e := startOps(t, nil)
	imp := e.importTraces(t, "t1", "t2")
	require.Equal(t, http.StatusOK, imp.status, string(imp.body))
	var imported struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(imp.body, &imported))
	ids := imported.TraceIDs
	require.Len(t, ids, 2)
	for i, rating := range []int{1, -1} {
		r := e.do(t, "POST", "/api/v1/rm/traces/"+ids[i]+"/annotations", map[string]any{"rating": rating})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
	}

	r := e.do(t, "GET", "/api/v1/rm/review-overlap", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.JSONEq(t, `{"overlap":1}`, string(r.body))
	requireField(t, e.do(t, "PUT", "/api/v1/rm/review-overlap", map[string]any{}), http.StatusUnprocessableEntity, "overlap")
	requireField(t, e.do(t, "PUT", "/api/v1/rm/review-overlap", map[string]any{"overlap": 11}), http.StatusUnprocessableEntity, "overlap")
	r = e.do(t, "PUT", "/api/v1/rm/review-overlap", map[string]any{"overlap": 2})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSchema(t, "ReviewOverlap", r.body)
	require.JSONEq(t, `{"overlap":2}`, string(r.body))

	r = e.do(t, "GET", "/api/v1/rm/agreement", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSchema(t, "AgreementReport", r.body)
	var rep struct {
		MinSample int             `json:"min_sample"`
		Account   json.RawMessage `json:"account"`
		Members   []struct {
			Judged int `json:"judged"`
		} `json:"members"`
		Judgments int `json:"judgments"`
	}
	require.NoError(t, json.Unmarshal(r.body, &rep))
	require.Equal(t, 10, rep.MinSample)
	require.JSONEq(t, `{"value":null,"n":0,"too_few":true}`, string(rep.Account))
	require.Len(t, rep.Members, 1)
	require.Equal(t, 2, rep.Members[0].Judged)
	require.Equal(t, 2, rep.Judgments)

	requireField(t, e.do(t, "POST", "/api/v1/rm/traces/"+ids[0]+"/adjudications", map[string]any{"rating": -1}), http.StatusUnprocessableEntity, "reason")
	requireField(t, e.do(t, "POST", "/api/v1/rm/traces/"+ids[0]+"/adjudications", map[string]any{"rating": 2, "reason": "r"}), http.StatusUnprocessableEntity, "rating")
	r = e.do(t, "POST", "/api/v1/rm/traces/"+ids[0]+"/adjudications", map[string]any{"rating": -1, "reason": "the refund was never issued"})
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	requireSchema(t, "Adjudication", r.body)
	require.Contains(t, string(r.body), `"reason":"the refund was never issued"`)

	r = e.do(t, "GET", "/api/v1/rm/disputed", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSchema(t, "Disputed", r.body)
	require.JSONEq(t, `{"items":[]}`, string(r.body))

	requireField(t, e.do(t, "POST", "/api/v1/rm/reward-models", map[string]any{"name": "m", "trace_ids": ids,
		"training_config": map[string]any{"exclude_disputed": "yes"}}), http.StatusUnprocessableEntity, "training_config.exclude_disputed")
	r = e.do(t, "POST", "/api/v1/rm/reward-models", map[string]any{"name": "m", "trace_ids": ids,
		"training_config": map[string]any{"annotation_source": "explicit", "exclude_disputed": true}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Contains(t, string(r.body), `"exclude_disputed":true`)
}
