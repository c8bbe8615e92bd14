package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// foldStates folds the loaded trace streams, in the order of ids.
func foldStates(t *testing.T, loaded map[string][]events.Envelope, ids ...string) []traces.State {
	t.Helper()
	var out []traces.State
	for _, id := range ids {
		st, err := traces.Fold(id, loaded[events.TraceStream(id)])
		require.NoError(t, err)
		out = append(out, st)
	}
	return out
}

// stepID is the id of step i of a trace, as GET /traces/{id} shows it.
func (e *opsEnv) stepID(t testing.TB, traceID string, i int) string {
	t.Helper()
	r := e.do(t, "GET", "/api/v1/rm/traces/"+traceID, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var d struct {
		Steps []struct {
			ID string `json:"id"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(r.body, &d))
	require.Greater(t, len(d.Steps), i, "trace %s has no step %d", traceID, i)
	return d.Steps[i].ID
}

// scoredModel trains a model on traceIDs as a worker would report it: its
// action scores are the given scores by step id.
func scoredModel(t testing.TB, e *opsEnv, name string, traceIDs []string, scores map[string]float64, traceOf map[string]string) string {
	t.Helper()
	ctx := context.Background()
	r := e.do(t, "POST", "/api/v1/rm/reward-models", map[string]any{"name": name, "trace_ids": traceIDs,
		"training_config": map[string]any{"annotation_source": "explicit"}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var m struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(r.body, &m))
	cmds := e.srv.Cmds
	_, err := cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: m.ID})
	require.NoError(t, err)
	job, err := cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w1", ModelID: m.ID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	blobs := e.store.Blobs()
	require.NoError(t, blobs.Put(ctx, job.ArtifactKey, []byte("checkpoint")))
	var lines []string
	for step, s := range scores {
		lines = append(lines, fmt.Sprintf(`{"trace_id":%q,"step_id":%q,"score":%g,"credit":0}`, traceOf[step], step, s))
	}
	key := jobs.ActionScoresKey(e.userID, m.ID, 1)
	require.NoError(t, blobs.Put(ctx, key, []byte(strings.Join(lines, "\n")+"\n")))
	res, err := cmds.CompleteTraining.Handle(ctx, commands.CompleteTraining{WorkerID: "w1", ModelID: m.ID, Attempt: 1,
		Metrics: json.RawMessage(`{"eval_pairs":0}`), ActionScoresKey: key})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, res.LastEventID))
	return m.ID
}

// TestModelsComparisons: two rollouts of one prompt, scored by two of the
// account's models that prefer different answers, are a queue item of
// source "models" (left/right seeded, recorded); the verdict is checked
// against the log, recorded once with both models and traces, trains a
// personal model over both traces and enters the shared evaluator only
// when both traces contribute.
func TestModelsComparisons(t *testing.T) {
	e := startOps(t, nil)
	ctx := context.Background()
	r := e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": strings.Join([]string{
		`{"id":"r1","title":"Ascending","steps":[{"role":"user","content":"Sort 3, 1, 2"},{"role":"assistant","content":"1, 2, 3"}]}`,
		`{"id":"r2","title":"Descending","steps":[{"role":"user","content":"Sort 3, 1, 2"},{"role":"assistant","content":"3, 2, 1"}]}`,
	}, "\n")})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var imp struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(r.body, &imp))
	t1, t2 := imp.TraceIDs[0], imp.TraceIDs[1]
	step := map[string]string{}
	traceOf := map[string]string{}
	for _, id := range imp.TraceIDs {
		step[id] = e.stepID(t, id, 1)
		traceOf[step[id]] = id
		// Ratings so each model has pairs to train on.
		rating := map[bool]int{true: 1, false: -1}[id == t1]
		for _, body := range []map[string]any{{"rating": rating}, {"step_id": step[id], "rating": rating}} {
			r := e.do(t, "POST", "/api/v1/rm/traces/"+id+"/annotations", body)
			require.Equal(t, http.StatusOK, r.status, string(r.body))
		}
	}
	// Nothing to compare while one model scored them.
	a := scoredModel(t, e, "a", imp.TraceIDs, map[string]float64{step[t1]: 2, step[t2]: -1}, traceOf)
	r = e.do(t, "GET", "/api/v1/rm/comparisons/queue", nil)
	require.JSONEq(t, `{"items":[]}`, string(r.body))
	b := scoredModel(t, e, "b", imp.TraceIDs, map[string]float64{step[t1]: 0.1, step[t2]: 0.4}, traceOf)

	r = e.do(t, "GET", "/api/v1/rm/comparisons/queue", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var q queueReply
	require.NoError(t, json.Unmarshal(r.body, &q))
	require.Len(t, q.Items, 1, string(r.body))
	it := q.Items[0]
	ma, mb := a, b
	if mb < ma {
		ma, mb = mb, ma
	}
	pref := map[string]string{a: step[t1], b: step[t2]}
	cid := comparisons.ContextID("user: Sort 3, 1, 2")
	require.Equal(t, "models", it.Source)
	require.Equal(t, ma, it.ModelID)
	require.Equal(t, comparisons.ModelsKey(mb, cid), it.FindingID)
	require.Equal(t, "user: Sort 3, 1, 2", it.Context)
	require.Equal(t, traceOf[pref[ma]], it.TraceID)
	sideA := events.ComparisonSide{Kind: "model_a", Action: map[string]string{a: "assistant: 1, 2, 3", b: "assistant: 3, 2, 1"}[ma], ModelID: ma, TraceID: traceOf[pref[ma]], StepID: pref[ma]}
	sideB := events.ComparisonSide{Kind: "model_b", Action: map[string]string{a: "assistant: 1, 2, 3", b: "assistant: 3, 2, 1"}[mb], ModelID: mb, TraceID: traceOf[pref[mb]], StepID: pref[mb]}
	require.ElementsMatch(t, []events.ComparisonSide{sideA, sideB}, []events.ComparisonSide{it.Left, it.Right})
	r2 := e.do(t, "GET", "/api/v1/rm/comparisons/queue", nil)
	require.Equal(t, string(r.body), string(r2.body), "the same order every time")

	// A wrong presentation is refused; the ascending answer wins.
	post := func(left, choice string) reply {
		return e.do(t, "POST", "/api/v1/rm/comparisons", map[string]any{"model_id": it.ModelID, "finding_id": it.FindingID, "left": left, "choice": choice})
	}
	require.Equal(t, http.StatusUnprocessableEntity, post(it.Right.Kind, "left").status)
	require.Equal(t, http.StatusUnprocessableEntity, post("original", "left").status)
	choice := "left"
	if it.Right.Action == "assistant: 1, 2, 3" {
		choice = "right"
	}
	r = post(it.Left.Kind, choice)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	var rec events.ComparisonReviewedV1
	require.NoError(t, json.Unmarshal(r.body, &rec))
	require.Equal(t, "models", rec.Source)
	require.Equal(t, []string{ma, mb}, []string{rec.ModelID, rec.OtherModelID})
	require.Equal(t, cid, rec.ContextID)
	require.Equal(t, e.userID, rec.ReviewerID)
	require.Equal(t, it.Left, rec.Left)
	require.Equal(t, it.Right, rec.Right)
	winKind := map[string]string{"left": it.Left.Kind, "right": it.Right.Kind}[choice]
	require.Equal(t, winKind, rec.Preferred)
	require.Equal(t, http.StatusConflict, post(it.Left.Kind, choice).status, "answered once")
	r = e.do(t, "GET", "/api/v1/rm/comparisons/queue", nil)
	require.JSONEq(t, `{"items":[]}`, string(r.body))

	// The verdict is a pair across both traces for a personal model.
	loaded, err := e.store.LoadStreams(ctx, []string{events.TraceStream(t1), events.TraceStream(t2)})
	require.NoError(t, err)
	states := foldStates(t, loaded, t1, t2)
	pairs := rewardmodels.ComparisonPairs(states, 1)
	require.Len(t, pairs, 1)
	require.ElementsMatch(t, []string{t1, t2}, pairs[0].TraceIDs)
	require.Equal(t, "user: Sort 3, 1, 2\nassistant: 1, 2, 3", pairs[0].Chosen)
	require.Equal(t, "user: Sort 3, 1, 2\nassistant: 3, 2, 1", pairs[0].Rejected)
	require.Empty(t, rewardmodels.ComparisonPairs(states[:1], 1), "only with both traces selected")

	// The shared evaluator: only once both traces contribute.
	onSide := func() int {
		loaded, err := e.store.LoadStreams(ctx, []string{events.TraceStream(t1), events.TraceStream(t2)})
		require.NoError(t, err)
		s := foldStates(t, loaded, t1, t2)
		return len(evaluator.ModelComparisonItems(s, true)) + len(evaluator.ModelComparisonItems(s, false))
	}
	require.Zero(t, onSide())
	r = e.do(t, "PUT", "/api/v1/rm/traces/"+t1+"/contribution", map[string]any{"contribute": true})
	require.Equal(t, http.StatusOK, r.status)
	require.Zero(t, onSide())
	r = e.do(t, "PUT", "/api/v1/rm/traces/"+t2+"/contribution", map[string]any{"contribute": true})
	require.Equal(t, http.StatusOK, r.status)
	g1, g2 := evaluator.InBenchmark(e.userID+"/"+t1), evaluator.InBenchmark(e.userID+"/"+t2)
	want := 0
	if g1 == g2 {
		want = 1 // across the split it is neither benchmark nor training
	}
	require.Equal(t, want, onSide())
}
