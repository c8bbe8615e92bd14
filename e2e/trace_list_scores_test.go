package e2e

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/projections/readmodel"
)

// scoredList is the account the trace-list score tests share: four traces,
// imported in this order, with what the list shows for them.
//
//	success  labeled, confirmed answer: outcome success; credited by two
//	         models, the second (newest) one counts; latest score 1.5
//	partial  labeled, nobody reacted: partial_success; no model scores
//	failure  labeled, answer rejected: failure; credit −0.6; score −2
//	plain    unlabeled: no outcome; latest score 0.3
type scoredList struct {
	key                              string
	success, partial, failure, plain string
	// first and second are the reward models that credited actions.
	first, second string
}

// labeledTraceAs is labeledTrace under another external id, the user's
// reaction (when confirmed) changed to verdict.
func labeledTraceAs(t *testing.T, id string, confirmed bool, verdict string) string {
	var tr map[string]any
	require.NoError(t, json.Unmarshal([]byte(labeledTrace(confirmed)), &tr))
	tr["id"], tr["title"] = id, "Refund "+id
	if confirmed && verdict != "" {
		steps := tr["steps"].([]any)
		last := steps[len(steps)-1].(map[string]any)
		last["metadata"].(map[string]any)["label"].(map[string]any)["verdict"] = verdict
		last["content"] = "No, that is wrong."
	}
	b, err := json.Marshal(tr)
	require.NoError(t, err)
	return string(b)
}

// seedScoredList imports the four traces and records model scores the way
// the worker service does (trace and action score events on the model's
// scores stream), then waits until the list shows them.
func seedScoredList(t *testing.T, in *instance) scoredList {
	t.Helper()
	s := scoredList{key: in.newUser("lister", false), first: uuid.NewString(), second: uuid.NewString()}
	s.success = in.importTraces(s.key, "stash", labeledTraceAs(t, "success", true, ""))[0]
	s.partial = in.importTraces(s.key, "stash", labeledTraceAs(t, "partial", false, ""))[0]
	s.failure = in.importTraces(s.key, "stash", labeledTraceAs(t, "failure", true, "rejected"))[0]
	s.plain = in.importTraces(s.key, "stash", `{"id":"plain","title":"Plain chat","steps":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`)[0]

	ctx := context.Background()
	var owner string
	require.NoError(t, in.pool.QueryRow(ctx, `SELECT owner_id FROM rm_traces WHERE id = $1`, s.success).Scan(&owner))
	revision := func(id string) int {
		var rev int
		require.NoError(t, in.pool.QueryRow(ctx, `SELECT revision FROM rm_traces WHERE id = $1`, id).Scan(&rev))
		return rev
	}
	actions := func(id string) []string { // the assistant steps, in order
		rows, err := in.pool.Query(ctx, `SELECT id FROM rm_steps WHERE trace_id = $1 AND role = 'assistant' ORDER BY idx`, id)
		require.NoError(t, err)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var sid string
			require.NoError(t, rows.Scan(&sid))
			out = append(out, sid)
		}
		require.NoError(t, rows.Err())
		return out
	}
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(in.pool, blobs)
	appendScores := func(model string, typ string, payload any) {
		_, err := store.Append(ctx, eventstore.Meta{Actor: "worker:test"}, nil, []events.New{{ID: uuid.NewString(),
			Stream: events.ScoresStream(model), OwnerID: owner, Type: typ, Payload: payload}})
		require.NoError(t, err)
	}
	succ, fail := actions(s.success), actions(s.failure)
	require.Len(t, succ, 2)
	appendScores(s.first, events.ActionsScored, events.ActionsScoredV1{ModelID: s.first, ModelName: "first", Scores: []events.ActionScore{
		{TraceID: s.success, StepID: succ[0], Revision: revision(s.success), Score: 1, Credit: 0.5},
		{TraceID: s.success, StepID: succ[1], Revision: revision(s.success), Score: 1, Credit: 0.3},
		{TraceID: s.failure, StepID: fail[0], Revision: revision(s.failure), Score: -1, Credit: -0.6},
	}})
	appendScores(s.first, events.TracesScored, events.TracesScoredV1{ModelID: s.first, ModelName: "first", Scores: []events.TraceScore{
		{TraceID: s.success, Revision: revision(s.success), Score: 1.5},
		{TraceID: s.failure, Revision: revision(s.failure), Score: -2},
		{TraceID: s.plain, Revision: revision(s.plain), Score: 0.3},
	}})
	// A later model credits one action of the success trace: the list
	// shows the newest model's credit, not a mix.
	time.Sleep(10 * time.Millisecond) // a later recorded_at than the first model's
	appendScores(s.second, events.ActionsScored, events.ActionsScoredV1{ModelID: s.second, ModelName: "second", Scores: []events.ActionScore{
		{TraceID: s.success, StepID: succ[1], Revision: revision(s.success), Score: 0.2, Credit: 0.1},
	}})
	deadline := time.Now().Add(30 * time.Second)
	for {
		row := in.listRow(t, s.key, s.success)
		if row["credit_model_id"] == s.second {
			break
		}
		require.True(t, time.Now().Before(deadline), "the list never showed the scores: %v", row)
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

// list is GET /traces?query as the ids shown, in order, and the total.
func (in *instance) list(t *testing.T, key, query string) ([]string, int) {
	t.Helper()
	r := in.do("GET", "/api/v1/rm/traces?"+query, key, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s: %s", query, r.Body)
	var body struct {
		Traces []struct {
			ID string `json:"id"`
		} `json:"traces"`
		Total int `json:"total"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &body))
	ids := []string{}
	for _, tr := range body.Traces {
		ids = append(ids, tr.ID)
	}
	return ids, body.Total
}

// listRow is one trace's row of GET /traces as JSON.
func (in *instance) listRow(t *testing.T, key, id string) map[string]any {
	t.Helper()
	r := in.do("GET", "/api/v1/rm/traces?limit=1000", key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	for _, tr := range r.JSON(t)["traces"].([]any) {
		if row := tr.(map[string]any); row["id"] == id {
			return row
		}
	}
	t.Fatalf("trace %s not in the list", id)
	return nil
}

// TestTraceListScores: GET /traces shows each trace's action credit (the
// newest crediting model's mean, with the count and the model), the
// automatic annotation's trace score and outcome, and the latest model
// score; sorts by each ascending and descending with unscored traces last
// both ways; filters by outcome and score bounds; answers 422 naming the
// parameter for a bad value; and a re-import clears the scores of the old
// revision.
func TestTraceListScores(t *testing.T) {
	in := startServe(t)
	s := seedScoredList(t, in)

	succ := in.listRow(t, s.key, s.success)
	require.InDelta(t, 0.1, succ["action_credit"].(float64), 1e-9, "the second model's one credit, not the first model's")
	require.EqualValues(t, 1, succ["scored_actions"])
	require.Equal(t, s.second, succ["credit_model_id"])
	require.Equal(t, "success", succ["outcome"])
	require.InDelta(t, 0.97, succ["trace_score"].(float64), 1e-9, "as step_scores.trace_score on the trace")
	require.InDelta(t, 1.5, succ["latest_score"].(map[string]any)["score"].(float64), 1e-9)
	fail := in.listRow(t, s.key, s.failure)
	require.InDelta(t, -0.6, fail["action_credit"].(float64), 1e-9)
	require.Equal(t, s.first, fail["credit_model_id"])
	require.Equal(t, "failure", fail["outcome"])
	part := in.listRow(t, s.key, s.partial)
	require.Nil(t, part["action_credit"])
	require.EqualValues(t, 0, part["scored_actions"])
	require.Nil(t, part["credit_model_id"])
	require.Equal(t, "partial_success", part["outcome"])
	require.Nil(t, part["latest_score"])
	plain := in.listRow(t, s.key, s.plain)
	require.Nil(t, plain["trace_score"])
	require.Nil(t, plain["outcome"])
	require.Less(t, fail["trace_score"].(float64), part["trace_score"].(float64), "a rejected answer scores below an unanswered one")

	// The detail carries the same summary fields.
	r := in.do("GET", "/api/v1/rm/traces/"+s.success, s.key, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "success", r.JSON(t)["outcome"])

	for query, want := range map[string][]string{
		"":                        {s.plain, s.failure, s.partial, s.success},
		"sort=action_credit":      {s.failure, s.success, s.plain, s.partial},
		"sort=-action_credit":     {s.success, s.failure, s.plain, s.partial},
		"sort=scored_actions":     {s.plain, s.partial, s.failure, s.success},
		"sort=-scored_actions":    {s.failure, s.success, s.plain, s.partial},
		"sort=trace_score":        {s.failure, s.partial, s.success, s.plain},
		"sort=-trace_score":       {s.success, s.partial, s.failure, s.plain},
		"sort=outcome":            {s.failure, s.partial, s.success, s.plain},
		"sort=-outcome":           {s.success, s.partial, s.failure, s.plain},
		"sort=latest_score":       {s.failure, s.plain, s.success, s.partial},
		"sort=-latest_score":      {s.success, s.plain, s.failure, s.partial},
		"outcome=failure":         {s.failure},
		"outcome=failure,success": {s.failure, s.success},
		"outcome=success&outcome=failure&sort=-trace_score": {s.success, s.failure},
		"action_credit_max=0":                               {s.failure},
		"action_credit_min=0":                               {s.success},
		"action_credit_min=-1&action_credit_max=1":          {s.failure, s.success},
		"trace_score_min=0.5":                               {s.success},
		"trace_score_max=0.5":                               {s.failure, s.partial},
		"latest_score_min=0&sort=latest_score":              {s.plain, s.success},
		"latest_score_max=0":                                {s.failure},
		"outcome=partial_success&action_credit_max=0":       {},
		"sort=-action_credit&limit=2&offset=1":              {s.failure, s.plain},
	} {
		got, total := in.list(t, s.key, query)
		require.Equal(t, want, got, "?%s", query)
		if !strings.Contains(query, "limit") {
			require.Equal(t, len(want), total, "?%s", query)
		}
	}
	_, total := in.list(t, s.key, "sort=-action_credit&limit=2&offset=1")
	require.Equal(t, 4, total, "the total counts the whole filtered list, not the page")

	for query, param := range map[string]string{
		"sort=credit":                         "sort",
		"outcome=great":                       "outcome",
		"outcome=failure,":                    "", // an empty item is ignored
		"action_credit_max=abc":               "action_credit_max",
		"trace_score_min=NaN":                 "trace_score_min",
		"latest_score_max=Inf":                "latest_score_max",
		"trace_score_min=1&trace_score_max=0": "trace_score_min",
	} {
		r := in.do("GET", "/api/v1/rm/traces?"+query, s.key, nil)
		if param == "" {
			require.Equal(t, http.StatusOK, r.Status, "?%s: %s", query, r.Body)
			continue
		}
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "?%s: %s", query, r.Body)
		require.Contains(t, string(r.Body), param, "?%s names the parameter", query)
	}

	// SQL reads the same columns from the trace_list view.
	in.awaitQuery(t, s.key, `SELECT title, action_credit, scored_actions, credit_model_id, round(trace_score, 2), outcome, latest_score
		FROM trace_list ORDER BY action_credit NULLS LAST, title`, [][]any{
		{"Refund failure", -0.6, 1, s.first, -0.78, "failure", -2},
		{"Refund success", 0.1, 1, s.second, 0.97, "success", 1.5},
		{"Plain chat", nil, 0, nil, nil, nil, 0.3},
		{"Refund partial", nil, 0, nil, 0.22, "partial_success", nil},
	})

	// A changed re-import is a new revision: the old revision's model
	// scores no longer describe it, so they leave the list with it; the
	// labels of the new content give it a new outcome.
	require.Equal(t, []string{s.success}, in.importTraces(s.key, "stash", labeledTraceAs(t, "success", false, "")))
	succ = in.listRow(t, s.key, s.success)
	require.Nil(t, succ["action_credit"])
	require.EqualValues(t, 0, succ["scored_actions"])
	require.Nil(t, succ["credit_model_id"])
	require.Nil(t, succ["latest_score"])
	require.Equal(t, "partial_success", succ["outcome"])
	got, _ := in.list(t, s.key, "sort=-action_credit")
	require.Equal(t, []string{s.failure, s.plain, s.partial, s.success}, got)
	got, _ = in.list(t, s.key, url.Values{"outcome": {"success"}}.Encode())
	require.Empty(t, got)
	in.awaitQuery(t, s.key, `SELECT action_credit, scored_actions, latest_score, outcome FROM trace_list WHERE title = 'Refund success'`,
		[][]any{{nil, 0, nil, "partial_success"}})

	// The columns are the read model's: a replay of the log rebuilds the
	// same list.
	require.Eventually(t, func() bool {
		lag, err := readmodel.Lag(context.Background(), in.pool, math.MaxInt32)
		return err == nil && lag == 0
	}, time.Minute, 50*time.Millisecond)
	before := in.do("GET", "/api/v1/rm/traces?sort=-action_credit", s.key, nil)
	out, err := in.cli("replay", "readmodel")
	require.NoError(t, err, out)
	after := in.do("GET", "/api/v1/rm/traces?sort=-action_credit", s.key, nil)
	require.Equal(t, http.StatusOK, after.Status)
	require.JSONEq(t, string(before.Body), string(after.Body))
}
