package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/projections/readmodel"
)

// TestOneRatingPerReviewer: a reviewer who rates a step they rated before
// (with a comment) ends with one vote there, the new one, and their comment
// kept; re-rating by PATCH does the same; replaying the log agrees.
func TestOneRatingPerReviewer(t *testing.T) {
	e := startOps(t, nil)
	ctx := context.Background()
	r := e.importTraces(t, "one-vote")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var imported struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(r.body, &imported))
	traceID := imported.TraceIDs[0]
	step := e.stepID(t, traceID, 1)
	post := func(body map[string]any) string {
		t.Helper()
		r := e.do(t, "POST", "/api/v1/rm/traces/"+traceID+"/annotations", body)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var a struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(r.body, &a))
		return a.ID
	}
	type ann struct {
		ID      string  `json:"id"`
		StepID  *string `json:"step_id"`
		Rating  *int    `json:"rating"`
		Comment *string `json:"comment"`
	}
	annotations := func() []ann {
		t.Helper()
		r := e.do(t, "GET", "/api/v1/rm/traces/"+traceID, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var d struct {
			Annotations []ann `json:"annotations"`
		}
		require.NoError(t, json.Unmarshal(r.body, &d))
		return d.Annotations
	}
	ratings := func() map[string]int {
		out := map[string]int{}
		for _, a := range annotations() {
			if a.Rating != nil {
				out[a.ID] = *a.Rating
			}
		}
		return out
	}

	first := post(map[string]any{"step_id": step, "rating": 1, "comment": "lacks a source - guessed?"})
	second := post(map[string]any{"step_id": step, "rating": 1})
	require.Equal(t, map[string]int{second: 1}, ratings(), "a second +1 replaces the first: 1 ▲, not 2")
	var kept *ann
	for _, a := range annotations() {
		if a.ID == first {
			kept = &a
		}
	}
	require.NotNil(t, kept, "the first annotation keeps its comment")
	require.Equal(t, "lacks a source - guessed?", *kept.Comment)
	require.Nil(t, kept.Rating)

	third := post(map[string]any{"step_id": step, "rating": -1})
	require.Equal(t, map[string]int{third: -1}, ratings(), "re-rated down: one -1, not a net 0")
	traceVote := post(map[string]any{"rating": 1})
	require.Equal(t, map[string]int{third: -1, traceVote: 1}, ratings(), "the trace is another target")

	// PATCH that gives the comment-only annotation a rating again takes the vote.
	r = e.do(t, "PATCH", "/api/v1/rm/annotations/"+first, map[string]any{"rating": 1})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, map[string]int{first: 1, traceVote: 1}, ratings())

	before := dumpTables(t, e, "rm_annotations")
	_, err := readmodel.New(e.pool, e.blobs, nil).Replay(ctx, eventstore.New(e.pool, e.blobs))
	require.NoError(t, err)
	require.Equal(t, before, dumpTables(t, e, "rm_annotations"))
}
