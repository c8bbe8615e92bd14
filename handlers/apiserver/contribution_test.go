package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type contributionReply struct {
	TraceID    string `json:"trace_id"`
	Contribute bool   `json:"contribute"`
	Notice     string `json:"notice"`
}

// summaries returns each listed trace's consent by external id.
func (e *opsEnv) consentByExternalID(t *testing.T) map[string]bool {
	t.Helper()
	r := e.do(t, "GET", "/api/v1/rm/traces", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var list struct {
		Traces []struct {
			ExternalID string `json:"external_id"`
			Contribute *bool  `json:"contribute"`
		} `json:"traces"`
	}
	require.NoError(t, json.Unmarshal(r.body, &list))
	out := map[string]bool{}
	for _, tr := range list.Traces {
		require.NotNil(t, tr.Contribute, "every summary says whether its trace contributes")
		out[tr.ExternalID] = *tr.Contribute
	}
	return out
}

func (e *opsEnv) consentEvents(t *testing.T, traceID string) []map[string]any {
	t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT payload FROM events WHERE type = 'trace.contribution_set.v1' AND stream = $1 ORDER BY seq`, "trace/"+traceID)
	require.NoError(t, err)
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var p map[string]any
		require.NoError(t, rows.Scan(&p))
		out = append(out, p)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestTraceContribution: consent is per trace, off until someone opts the
// trace in (over the API or on import), stored as events (setting the same
// value twice is one fact), shown on summaries, and opting out says plainly
// that released weights cannot unlearn. Bad requests change nothing.
func TestTraceContribution(t *testing.T) {
	e := startOps(t, nil)

	r := e.importTraces(t, "c-1", "c-2")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var imp struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(r.body, &imp))
	require.Len(t, imp.TraceIDs, 2)
	c1 := imp.TraceIDs[0]
	require.Equal(t, map[string]bool{"c-1": false, "c-2": false}, e.consentByExternalID(t), "nothing contributes until opted in")

	path := "/api/v1/rm/traces/" + c1 + "/contribution"
	r = e.do(t, "PUT", path, map[string]any{"contribute": true})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var got contributionReply
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.Equal(t, c1, got.TraceID)
	require.True(t, got.Contribute)
	require.Contains(t, got.Notice, "corrections, step ratings and reviewed comparisons")
	require.Equal(t, map[string]bool{"c-1": true, "c-2": false}, e.consentByExternalID(t))

	// The same value again is not a second fact.
	r = e.do(t, "PUT", path, map[string]any{"contribute": true})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Len(t, e.consentEvents(t, c1), 1)

	r = e.do(t, "PUT", path, map[string]any{"contribute": false})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.False(t, got.Contribute)
	require.Contains(t, got.Notice, "cannot unlearn")
	evs := e.consentEvents(t, c1)
	require.Len(t, evs, 2)
	require.Equal(t, false, evs[1]["contribute"])
	require.Equal(t, "api", evs[1]["via"])
	require.Equal(t, float64(1), evs[1]["revision"])
	require.Equal(t, map[string]bool{"c-1": false, "c-2": false}, e.consentByExternalID(t))

	// Bad requests: each answers its error and appends nothing.
	before := eventCount(t, e.pool)
	for _, tc := range []struct {
		path   string
		body   any
		status int
	}{
		{path, map[string]any{}, http.StatusUnprocessableEntity},
		{path, map[string]any{"contribute": "yes"}, http.StatusUnprocessableEntity},
		{path, map[string]any{"contribute": true, "scope": "all"}, http.StatusUnprocessableEntity},
		{"/api/v1/rm/traces/00000000-0000-0000-0000-000000000000/contribution", map[string]any{"contribute": true}, http.StatusNotFound},
		{"/api/v1/rm/traces/not-a-uuid/contribution", map[string]any{"contribute": true}, http.StatusNotFound},
	} {
		r := e.do(t, "PUT", tc.path, tc.body)
		require.Equal(t, tc.status, r.status, "%s %v: %s", tc.path, tc.body, r.body)
	}
	require.Equal(t, before, eventCount(t, e.pool))

	// On import: the flag applies to every trace of the payload, new and
	// re-imported, in the same transaction as the content.
	r = e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "contribute": true,
		"data": traceLine("c-2") + "\n" + traceLine("c-3")})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, map[string]bool{"c-1": false, "c-2": true, "c-3": true}, e.consentByExternalID(t))
	var imp2 struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(r.body, &imp2))
	evs = e.consentEvents(t, imp2.TraceIDs[0])
	require.Len(t, evs, 1)
	require.Equal(t, "import", evs[0]["via"])
	// The consent event names the revision the same import produced.
	var rev float64
	require.NoError(t, e.pool.QueryRow(context.Background(), `SELECT revision FROM rm_traces WHERE id = $1`, imp2.TraceIDs[0]).Scan(&rev))
	require.Equal(t, rev, evs[0]["revision"])

	// An import without the flag leaves consent as it was.
	r = e.importTraces(t, "c-3")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.True(t, e.consentByExternalID(t)["c-3"])

	// A raw JSONL import takes it as a query parameter, and only true or false.
	req, err := http.NewRequest("POST", e.url+"/api/v1/rm/traces/import?format=stash&contribute=maybe", strings.NewReader(traceLine("c-4")))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.key)
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	req, err = http.NewRequest("POST", e.url+"/api/v1/rm/traces/import?format=stash&contribute=false", strings.NewReader(traceLine("c-3")))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.key)
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, map[string]bool{"c-1": false, "c-2": true, "c-3": false}, e.consentByExternalID(t))

	// GET /traces/{id} carries it too, and a deleted then re-imported trace
	// starts opted out again.
	r = e.do(t, "GET", "/api/v1/rm/traces/"+imp2.TraceIDs[0], nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, string(r.body), `"contribute":true`)
	var detail struct {
		Evaluator json.RawMessage `json:"evaluator"`
	}
	require.NoError(t, json.Unmarshal(r.body, &detail))
	require.JSONEq(t, `{"status":"waiting_for_first_release","release":null,"live_release":null,"error":null,"action_scores":[]}`, string(detail.Evaluator),
		"before a release the trace says it waits for one, apart from personal models' scores")
	r = e.do(t, "DELETE", "/api/v1/rm/traces/"+imp2.TraceIDs[0], nil)
	require.Equal(t, http.StatusNoContent, r.status, string(r.body))
	r = e.importTraces(t, "c-2")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.False(t, e.consentByExternalID(t)["c-2"])
}
