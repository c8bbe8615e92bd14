package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/handlers/apiserver"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/projections/readmodel"
)

type queueReply struct {
	Items []struct {
		ModelID       string                `json:"model_id"`
		FindingID     string                `json:"finding_id"`
		TraceID       string                `json:"trace_id"`
		TraceRevision int                   `json:"trace_revision"`
		StepID        string                `json:"step_id"`
		StepIndex     int                   `json:"step_index"`
		Source        string                `json:"source"`
		Context       string                `json:"context"`
		Left          events.ComparisonSide `json:"left"`
		Right         events.ComparisonSide `json:"right"`
	} `json:"items"`
}

// withFindings imports one conversation whose user corrected the agent,
// requests a feedback-trained model over it, and records what a worker's
// classifier and review found (an alternative action) through the same
// commands the worker service calls. It returns the trace and model ids and
// the finding.
func withFindings(t *testing.T, e *opsEnv, ext string) (traceID, modelID string, f events.Finding) {
	t.Helper()
	ctx := context.Background()
	r := e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": `{"id":"` + ext + `","steps":[{"role":"user","content":"Sort 3,1,2"},{"role":"assistant","content":"3,2,1"},{"role":"user","content":"No, that's the wrong order."}]}`})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var imp struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(r.body, &imp))
	traceID = imp.TraceIDs[0]
	r = e.do(t, "GET", "/api/v1/rm/traces/"+traceID, nil)
	require.Equal(t, http.StatusOK, r.status)
	var detail struct {
		Steps []struct {
			ID      string `json:"id"`
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(r.body, &detail))
	tr := feedback.Trace{ID: traceID, Revision: 1}
	for _, s := range detail.Steps {
		tr.Steps = append(tr.Steps, domain.PairStep{ID: s.ID, Role: domain.Role(s.Role), Content: s.Content})
	}

	r = e.do(t, "POST", "/api/v1/rm/reward-models", map[string]any{"name": "m", "trace_ids": []string{traceID},
		"training_config": map[string]any{"annotation_source": "feedback"}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var m struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(r.body, &m))
	modelID = m.ID

	cmds := e.srv.Cmds
	_, err := cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: modelID})
	require.NoError(t, err)
	_, err = cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w1", ModelID: modelID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	ts := feedback.Targets(tr)
	require.Len(t, ts, 1)
	tg := ts[0]
	id, quote, alt := tg.Evidence[0].ID, "wrong order", "1,2,3"
	f, review, _ := feedback.FromFeedback(tg, feedback.FeedbackAnswer{Label: "negative", Confidence: "high", About: "agent",
		EvidenceID: &id, EvidenceQuote: &quote, Alternative: &alt, Reason: "scripted"}, "openai/test", feedback.ConfigHash(feedback.DefaultCriteria))
	require.True(t, review)
	want := "B"
	if !feedback.OriginalFirst(tg.TraceID, tg.StepID) {
		want = "A"
	}
	feedback.ApplyReview(&f, tg, feedback.ReviewAnswer{Preferred: want, Grounded: true})
	require.Equal(t, events.OutcomePair, f.Outcome)
	_, err = cmds.RecordFeedback.Handle(ctx, commands.RecordFeedback{WorkerID: "w1", ModelID: modelID, Feedback: events.RewardModelFeedbackExtractedV1{Attempt: 1, TraceID: traceID, TraceRevision: 1,
		ClassifierModel: "openai/test", PromptVersion: feedback.PromptVersion, ConfigHash: feedback.ConfigHash(feedback.DefaultCriteria),
		Targets: 1, Findings: []events.Finding{f}, Usage: []events.LLMUsage{}}})
	require.NoError(t, err)
	res, err := cmds.FinishExtraction.Handle(ctx, commands.FinishExtraction{WorkerID: "w1", ModelID: modelID, Attempt: 1})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, res.LastEventID))
	return traceID, modelID, f
}

// TestReviewedComparisons: a finding's AI-generated alternative is queued
// against the original action for the same context, left and right in the
// seeded order; a verdict is recorded once, with its provenance, leaves the
// queue, is refused for a wrong presentation or another account, and goes
// with its trace.
func TestReviewedComparisons(t *testing.T) {
	e := startOps(t, func(c *apiserver.Config) {
		c.CommandOptions = []commands.Option{commands.WithFeedbackModel("openai/test", "")}
	})
	ctx := context.Background()
	traceID, modelID, f := withFindings(t, e, "sort-1")

	r := e.do(t, "GET", "/api/v1/rm/comparisons/queue", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var q queueReply
	require.NoError(t, json.Unmarshal(r.body, &q))
	require.Len(t, q.Items, 1)
	it := q.Items[0]
	require.Equal(t, modelID, it.ModelID)
	require.Equal(t, f.ID, it.FindingID)
	require.Equal(t, traceID, it.TraceID)
	require.Equal(t, 1, it.StepIndex)
	require.Equal(t, "user_feedback", it.Source)
	require.Equal(t, "user: Sort 3,1,2", it.Context)
	orig := events.ComparisonSide{Kind: "original", Action: "assistant: 3,2,1"}
	alt := events.ComparisonSide{Kind: "alternative", Action: "assistant: 1,2,3"}
	if comparisons.OriginalLeft(e.userID, f.ID) {
		require.Equal(t, orig, it.Left)
		require.Equal(t, alt, it.Right)
	} else {
		require.Equal(t, alt, it.Left)
		require.Equal(t, orig, it.Right)
	}
	// Asking again shows the same order.
	r = e.do(t, "GET", "/api/v1/rm/comparisons/queue?limit=5", nil)
	var q2 queueReply
	require.NoError(t, json.Unmarshal(r.body, &q2))
	require.Equal(t, q, q2)

	u2, err := e.srv.Cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "other"})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, u2.LastEventID))
	before := eventCount(t, e.pool)
	other := it.Right.Kind
	altChoice := "left"
	if it.Right.Kind == "alternative" {
		altChoice = "right"
	}
	for _, tc := range []struct {
		body   map[string]any
		status int
	}{
		{map[string]any{"model_id": modelID, "finding_id": f.ID, "left": other, "choice": "left"}, http.StatusUnprocessableEntity},
		{map[string]any{"model_id": modelID, "finding_id": f.ID, "left": it.Left.Kind, "choice": "both"}, http.StatusUnprocessableEntity},
		{map[string]any{"model_id": modelID, "finding_id": f.ID, "left": it.Left.Kind}, http.StatusUnprocessableEntity},
		{map[string]any{"model_id": modelID, "finding_id": f.ID, "left": it.Left.Kind, "choice": "tie", "weight": 2}, http.StatusUnprocessableEntity},
		{map[string]any{"model_id": modelID, "finding_id": "nope", "left": it.Left.Kind, "choice": "tie"}, http.StatusNotFound},
		{map[string]any{"model_id": "00000000-0000-0000-0000-000000000000", "finding_id": f.ID, "left": it.Left.Kind, "choice": "tie"}, http.StatusNotFound},
	} {
		r := e.do(t, "POST", "/api/v1/rm/comparisons", tc.body)
		require.Equal(t, tc.status, r.status, "%v: %s", tc.body, r.body)
	}
	// Another account cannot see or answer this account's comparisons.
	r = e.do(t, "POST", "/api/v1/rm/comparisons", map[string]any{"model_id": modelID, "finding_id": f.ID, "left": it.Left.Kind, "choice": "tie"},
		"Authorization", "Bearer "+u2.APIKey)
	require.Equal(t, http.StatusNotFound, r.status, string(r.body))
	r = e.do(t, "GET", "/api/v1/rm/comparisons/queue", nil, "Authorization", "Bearer "+u2.APIKey)
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"items":[]}`, string(r.body))
	require.Equal(t, before, eventCount(t, e.pool), "refused verdicts append nothing")

	r = e.do(t, "POST", "/api/v1/rm/comparisons", map[string]any{"model_id": modelID, "finding_id": f.ID, "left": it.Left.Kind,
		"choice": altChoice, "comment": "  sorted ascending  "})
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	var c events.ComparisonReviewedV1
	require.NoError(t, json.Unmarshal(r.body, &c))
	require.Equal(t, "alternative", c.Preferred)
	require.Equal(t, e.userID, c.ReviewerID)
	require.Equal(t, f.ID, c.FindingID)
	require.Equal(t, modelID, c.ModelID)
	require.Equal(t, 1, c.TraceRevision)
	require.Equal(t, it.Left, c.Left)
	require.Equal(t, "sorted ascending", *c.Comment)
	chosen, rejected, ok := comparisons.Pair(c)
	require.True(t, ok)
	require.Equal(t, "user: Sort 3,1,2\nassistant: 1,2,3", chosen)
	require.Equal(t, "user: Sort 3,1,2\nassistant: 3,2,1", rejected)

	// Stored as an event on the trace's stream, projected, and gone from the queue.
	var stream string
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT stream FROM events WHERE type = 'comparison.reviewed.v1'`).Scan(&stream))
	require.Equal(t, "trace/"+traceID, stream)
	var rows int
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT count(*) FROM rm_comparisons WHERE finding_id = $1 AND reviewer_id = $2`, f.ID, e.userID).Scan(&rows))
	require.Equal(t, 1, rows)
	r = e.do(t, "GET", "/api/v1/rm/comparisons/queue", nil)
	require.JSONEq(t, `{"items":[]}`, string(r.body))
	r = e.do(t, "POST", "/api/v1/rm/comparisons", map[string]any{"model_id": modelID, "finding_id": f.ID, "left": it.Left.Kind, "choice": "tie"})
	require.Equal(t, http.StatusConflict, r.status, string(r.body))

	// Deleting the trace drops its comparisons from the read model.
	r = e.do(t, "DELETE", "/api/v1/rm/traces/"+traceID, nil)
	require.Equal(t, http.StatusNoContent, r.status)
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT count(*) FROM rm_comparisons`).Scan(&rows))
	require.Equal(t, 0, rows)
}

// reviewAlternative answers a queued comparison for the alternative.
func (e *opsEnv) reviewAlternative(t *testing.T, modelID, findingID string) {
	t.Helper()
	left, _ := comparisons.Sides(e.userID, findingID, "", "")
	choice := "left"
	if left.Kind == "original" {
		choice = "right"
	}
	r := e.do(t, "POST", "/api/v1/rm/comparisons", map[string]any{"model_id": modelID, "finding_id": findingID, "left": left.Kind, "choice": choice})
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
}

// TestEvaluatorStatus: before a release GET /evaluator says traces wait for
// the first one and shows the policy; a benchmark frozen from an opted-in
// trace's reviewed comparison appears with its figures; the candidate
// commands are absent and say so.
func TestEvaluatorStatus(t *testing.T) {
	e := startOps(t, func(c *apiserver.Config) {
		c.CommandOptions = []commands.Option{commands.WithFeedbackModel("openai/test", "")}
	})
	ctx := context.Background()
	r := e.do(t, "GET", "/api/v1/rm/evaluator", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var st struct {
		Status     string          `json:"status"`
		Message    string          `json:"message"`
		Release    json.RawMessage `json:"release"`
		Benchmarks []struct {
			Version int `json:"version"`
			Items   int `json:"items"`
			Slices  map[string]struct {
				Slices    int `json:"slices"`
				Populated int `json:"populated"`
			} `json:"slices"`
		} `json:"benchmarks"`
		Policy struct {
			MinSlice int `json:"min_slice"`
		} `json:"policy"`
	}
	require.NoError(t, json.Unmarshal(r.body, &st))
	require.Equal(t, "waiting_for_first_release", st.Status)
	require.Contains(t, st.Message, "wait for the first release")
	require.JSONEq(t, "null", string(st.Release))
	require.Empty(t, st.Benchmarks)
	require.Equal(t, evaluator.DefaultMinSlice, st.Policy.MinSlice)

	_, err := e.srv.Cmds.FreezeBenchmark.Handle(ctx, commands.FreezeBenchmark{Operator: "op"})
	require.Error(t, err, "nothing reviewed yet")

	// Reviewed comparisons on opted-in traces until one lies in a benchmark
	// group (a fixed 30% of groups); a reviewed but opted-out trace never
	// counts.
	_, modelID, f := withFindings(t, e, "out")
	e.reviewAlternative(t, modelID, f.ID)
	inBench := 0
	for i := 0; inBench == 0 && i < 40; i++ {
		traceID, modelID, f := withFindings(t, e, fmt.Sprintf("in-%d", i))
		e.reviewAlternative(t, modelID, f.ID)
		r = e.do(t, "PUT", "/api/v1/rm/traces/"+traceID+"/contribution", map[string]any{"contribute": true})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		if evaluator.InBenchmark(e.userID + "/" + traceID) {
			inBench++
		}
	}
	require.Equal(t, 1, inBench)
	res, err := e.srv.Cmds.FreezeBenchmark.Handle(ctx, commands.FreezeBenchmark{Operator: "op"})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, res.LastEventID))
	require.Len(t, res.Benchmark.Items, 1)

	r = e.do(t, "GET", "/api/v1/rm/evaluator", nil)
	require.NoError(t, json.Unmarshal(r.body, &st))
	require.Equal(t, "waiting_for_first_release", st.Status, "a benchmark is not a release")
	require.Len(t, st.Benchmarks, 1)
	require.Equal(t, 1, st.Benchmarks[0].Version)
	require.Equal(t, 1, st.Benchmarks[0].Items)
	require.Equal(t, 1, st.Benchmarks[0].Slices["tool"].Slices, "one tool slice: text responses")
	require.Equal(t, 0, st.Benchmarks[0].Slices["tool"].Populated, "1 item is below CRITIC_EVALUATOR_MIN_SLICE")
	require.NotContains(t, string(r.body), "(response)", "slice values come from every account and are not shown")

	// A candidate trained and reported through the worker commands (as
	// the worker service runs them), released, then rolled back.
	cmds := e.srv.Cmds
	var trainTrace string
	for trainSide, i := 0, 0; trainSide == 0 && i < 40; i++ { // a training-side trace: its comparison and correction train
		traceID, modelID, f := withFindings(t, e, fmt.Sprintf("train-%d", i))
		e.reviewAlternative(t, modelID, f.ID)
		r = e.do(t, "PUT", "/api/v1/rm/traces/"+traceID+"/contribution", map[string]any{"contribute": true})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		if !evaluator.InBenchmark(e.userID + "/" + traceID) {
			trainSide++
			trainTrace = traceID
		}
	}
	req, err := cmds.RequestCandidate.Handle(ctx, commands.RequestCandidate{BaseModel: "tiny", Operator: "op"})
	require.NoError(t, err)
	_, err = cmds.ClaimCandidate.Handle(ctx, commands.ClaimCandidate{WorkerID: "w1", ID: req.Candidate.CandidateID, Lease: 30 * time.Second})
	require.NoError(t, err)
	require.NoError(t, e.blobs.Put(ctx, req.Candidate.ArtifactKey, []byte("checkpoint")))
	margins := map[string]float64{res.Benchmark.Items[0].ID: 1.5}
	_, err = cmds.CompleteCandidate.Handle(ctx, commands.CompleteCandidate{WorkerID: "w2", ID: req.Candidate.CandidateID, Result: jobs.EvaluatorCandidateSucceeded{CandidateMargins: margins,
		Metrics: json.RawMessage(`{}`), ActionRewardStats: json.RawMessage(`{"mean":0,"std":1}`)}})
	var conflict *domain.ConflictError
	require.ErrorAs(t, err, &conflict, "only the worker holding the candidate reports it")
	_, err = cmds.CompleteCandidate.Handle(ctx, commands.CompleteCandidate{WorkerID: "w1", ID: req.Candidate.CandidateID, Result: jobs.EvaluatorCandidateSucceeded{CandidateMargins: map[string]float64{"other": 1},
		Metrics: json.RawMessage(`{}`), ActionRewardStats: json.RawMessage(`{"mean":0,"std":1}`)}})
	var invalid *domain.ValidationError
	require.ErrorAs(t, err, &invalid, "margins must cover the benchmark")
	_, err = cmds.CompleteCandidate.Handle(ctx, commands.CompleteCandidate{WorkerID: "w1", ID: req.Candidate.CandidateID, Result: jobs.EvaluatorCandidateSucceeded{CandidateMargins: margins,
		Metrics: json.RawMessage(`{}`), ActionRewardStats: json.RawMessage(`{"mean":0,"std":1}`)}})
	require.NoError(t, err)
	// One benchmark item the candidate gets right wins every bootstrap
	// resample against chance: the interval is [0.5, 0.5] and it passes.
	rel, err := cmds.ReleaseCandidate.Handle(ctx, commands.ReleaseCandidate{Policy: evaluator.DefaultPolicy(), By: "op"})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, rel.LastEventID))
	type release struct {
		Version      int     `json:"version"`
		CandidateID  string  `json:"candidate_id"`
		Replaces     *int    `json:"replaces"`
		Live         bool    `json:"live"`
		RolledBackAt *string `json:"rolled_back_at"`
		Benchmark    struct {
			Items             int     `json:"items"`
			Accuracy          float64 `json:"accuracy"`
			IncumbentAccuracy float64 `json:"incumbent_accuracy"`
			DiffLow           float64 `json:"diff_low"`
			MinSlice          int     `json:"min_slice"`
		} `json:"benchmark"`
	}
	var live struct {
		Status   string    `json:"status"`
		Message  string    `json:"message"`
		Release  *release  `json:"release"`
		Releases []release `json:"releases"`
	}
	r = e.do(t, "GET", "/api/v1/rm/evaluator", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.NoError(t, json.Unmarshal(r.body, &live))
	requireSchema(t, "EvaluatorStatus", r.body)
	require.Equal(t, "released", live.Status)
	require.Contains(t, live.Message, "Release 1")
	require.NotNil(t, live.Release)
	require.Equal(t, 1, live.Release.Version)
	require.Equal(t, req.Candidate.CandidateID, live.Release.CandidateID)
	require.Nil(t, live.Release.Replaces)
	require.True(t, live.Release.Live)
	require.Equal(t, 1, live.Release.Benchmark.Items)
	require.InDelta(t, 1.0, live.Release.Benchmark.Accuracy, 1e-9)
	require.InDelta(t, 0.5, live.Release.Benchmark.IncumbentAccuracy, 1e-9)
	require.InDelta(t, 0.5, live.Release.Benchmark.DiffLow, 1e-9)
	require.Equal(t, evaluator.DefaultMinSlice, live.Release.Benchmark.MinSlice)
	require.NotContains(t, string(r.body), "(response)", "slice values stay with operators")

	// Automatic scoring: a trace imported while release 1 is live says it
	// is being scored, then shows the release's scores (the worker
	// service's commands record them as a worker reports them), in
	// GET /traces/{id} and in SQL.
	r = e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": `{"id":"auto","metadata":{"evaluation_context":"refunds within 30 days"},` +
		`"steps":[{"role":"system","content":"Follow the refund policy."},{"role":"user","content":"Refund 1182"},{"role":"assistant","content":"","tool_name":"lookup","tool_input":{"order":"1182"}},` +
		`{"role":"tool","content":"40 days ago"},{"role":"assistant","content":"Sorry, past 30 days."}]}`})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var imp struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(r.body, &imp))
	autoID := imp.TraceIDs[0]
	type traceEvaluator struct {
		Evaluator struct {
			Status       string  `json:"status"`
			Release      *int    `json:"release"`
			LiveRelease  *int    `json:"live_release"`
			Error        *string `json:"error"`
			ActionScores []struct {
				StepID    string  `json:"step_id"`
				StepIndex int     `json:"step_index"`
				Score     float64 `json:"score"`
				Credit    float64 `json:"credit"`
				Release   int     `json:"release"`
			} `json:"action_scores"`
		} `json:"evaluator"`
	}
	var tr traceEvaluator
	r = e.do(t, "GET", "/api/v1/rm/traces/"+autoID, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSchema(t, "TraceDetail", r.body)
	require.NoError(t, json.Unmarshal(r.body, &tr))
	require.Equal(t, "scoring", tr.Evaluator.Status)
	require.Equal(t, 1, *tr.Evaluator.LiveRelease)
	require.Nil(t, tr.Evaluator.Release)
	require.Empty(t, tr.Evaluator.ActionScores)

	claim, err := cmds.ClaimEvaluatorScoring.Handle(ctx, commands.ClaimEvaluatorScoring{TraceID: autoID})
	require.NoError(t, err)
	require.Len(t, claim.Inputs, 2)
	require.Contains(t, claim.Inputs[1].Text, "system: Follow the refund policy.\nevaluation_context: refunds within 30 days\nuser: Refund 1182")
	scored := jobs.EvaluatorScored{EvaluatorScoringRequest: jobs.EvaluatorScoringRequest{WorkerID: "w1", TraceRevision: claim.TraceRevision, Release: claim.Release},
		Scores: []jobs.EvaluatorActionScore{{StepID: claim.Inputs[0].StepID, Score: 0.75, Credit: 0.5}, {StepID: claim.Inputs[1].StepID, Score: -1.25, Credit: -0.5}}}
	bad := scored
	bad.Scores = bad.Scores[:1]
	_, err = cmds.RecordEvaluatorScores.Handle(ctx, commands.RecordEvaluatorScores{TraceID: autoID, Scores: bad})
	require.ErrorAs(t, err, &invalid, "every action gets a score")
	sr, err := cmds.RecordEvaluatorScores.Handle(ctx, commands.RecordEvaluatorScores{TraceID: autoID, Scores: scored})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, sr.LastEventID))
	_, err = cmds.RecordEvaluatorScores.Handle(ctx, commands.RecordEvaluatorScores{TraceID: autoID, Scores: scored})
	require.ErrorAs(t, err, &conflict, "a revision is scored once per release")

	r = e.do(t, "GET", "/api/v1/rm/traces/"+autoID, nil)
	requireSchema(t, "TraceDetail", r.body)
	tr = traceEvaluator{}
	require.NoError(t, json.Unmarshal(r.body, &tr))
	require.Equal(t, "scored", tr.Evaluator.Status)
	require.Equal(t, 1, *tr.Evaluator.Release)
	require.Len(t, tr.Evaluator.ActionScores, 2)
	require.Equal(t, 2, tr.Evaluator.ActionScores[0].StepIndex, "the tool call")
	require.Equal(t, 4, tr.Evaluator.ActionScores[1].StepIndex, "the answer")
	require.InDelta(t, -0.5, tr.Evaluator.ActionScores[1].Credit, 1e-12)
	require.Contains(t, string(r.body), `"action_scores":[]`, "personal models' action scores stay apart")

	var q reply
	require.Eventually(t, func() bool {
		q = e.do(t, "POST", "/api/v1/rm/query", map[string]any{"sql": "SELECT step_index, release, credit FROM evaluator_scores ORDER BY step_index"})
		return q.status == http.StatusOK && strings.Contains(string(q.body), "[2,1,0.5]") && strings.Contains(string(q.body), "[4,1,-0.5]")
	}, 20*time.Second, 50*time.Millisecond, "the SQL snapshot never showed the evaluator scores: %s", q.body)

	// "Score again" (spec 002): the live release scores the revision once
	// more. The trace says scoring, the earlier scores still shown; one more
	// report is then accepted (and only one), and its scores replace them.
	r = e.do(t, "POST", "/api/v1/rm/traces/"+autoID+"/evaluator/rescore", nil)
	require.Equal(t, http.StatusAccepted, r.status, string(r.body))
	requireSchema(t, "TraceEvaluator", r.body)
	var again struct {
		Status       string `json:"status"`
		ActionScores []any  `json:"action_scores"`
	}
	require.NoError(t, json.Unmarshal(r.body, &again))
	require.Equal(t, "scoring", again.Status)
	require.Len(t, again.ActionScores, 2, "the earlier scores stay until the new ones land")
	claim, err = cmds.ClaimEvaluatorScoring.Handle(ctx, commands.ClaimEvaluatorScoring{TraceID: autoID})
	require.NoError(t, err, "a scored revision may be claimed again once the owner asked")
	rescored := scored
	rescored.Scores = []jobs.EvaluatorActionScore{{StepID: claim.Inputs[0].StepID, Score: 0.5, Credit: 0.25}, {StepID: claim.Inputs[1].StepID, Score: 0.25, Credit: 0.125}}
	sr, err = cmds.RecordEvaluatorScores.Handle(ctx, commands.RecordEvaluatorScores{TraceID: autoID, Scores: rescored})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, sr.LastEventID))
	_, err = cmds.RecordEvaluatorScores.Handle(ctx, commands.RecordEvaluatorScores{TraceID: autoID, Scores: rescored})
	require.ErrorAs(t, err, &conflict, "one request, one more scoring")
	r = e.do(t, "GET", "/api/v1/rm/traces/"+autoID, nil)
	tr = traceEvaluator{}
	require.NoError(t, json.Unmarshal(r.body, &tr))
	require.Equal(t, "scored", tr.Evaluator.Status)
	require.InDelta(t, 0.125, tr.Evaluator.ActionScores[1].Credit, 1e-12)
	require.Equal(t, http.StatusNotFound, e.do(t, "POST", "/api/v1/rm/traces/"+uuid.NewString()+"/evaluator/rescore", nil).status)

	// A scoring job that fails: the trace says so, with the worker's reason.
	r = e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": `{"id":"auto-2","steps":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`})
	require.NoError(t, json.Unmarshal(r.body, &imp))
	failID := imp.TraceIDs[0]
	fc, err := cmds.ClaimEvaluatorScoring.Handle(ctx, commands.ClaimEvaluatorScoring{TraceID: failID})
	require.NoError(t, err)
	fr, err := cmds.FailEvaluatorScoring.Handle(ctx, commands.FailEvaluatorScoring{TraceID: failID, Failure: jobs.EvaluatorScoringFailed{EvaluatorScoringRequest: jobs.EvaluatorScoringRequest{WorkerID: "w1",
		TraceRevision: fc.TraceRevision, Release: fc.Release}, Error: "the scorer ran out of memory"}})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, fr.LastEventID))
	r = e.do(t, "GET", "/api/v1/rm/traces/"+failID, nil)
	requireSchema(t, "TraceDetail", r.body)
	tr = traceEvaluator{}
	require.NoError(t, json.Unmarshal(r.body, &tr))
	require.Equal(t, "failed", tr.Evaluator.Status)
	require.Equal(t, "the scorer ran out of memory", *tr.Evaluator.Error)

	rb, err := cmds.RollbackEvaluator.Handle(ctx, commands.RollbackEvaluator{By: "op"})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, rb.LastEventID))
	live.Release = nil
	r = e.do(t, "GET", "/api/v1/rm/evaluator", nil)
	require.NoError(t, json.Unmarshal(r.body, &live))
	requireSchema(t, "EvaluatorStatus", r.body)
	require.Equal(t, "waiting_for_first_release", live.Status, "after rolling back the only release traces wait again")
	r = e.do(t, "POST", "/api/v1/rm/traces/"+autoID+"/evaluator/rescore", nil)
	require.Equal(t, http.StatusConflict, r.status, "no release is live to score it again")
	require.Contains(t, string(r.body), "no shared evaluator release is live")
	require.Nil(t, live.Release)
	require.Len(t, live.Releases, 1)
	require.False(t, live.Releases[0].Live)
	require.NotNil(t, live.Releases[0].RolledBackAt)
	r = e.do(t, "GET", "/api/v1/rm/traces/"+autoID, nil)
	tr = traceEvaluator{}
	require.NoError(t, json.Unmarshal(r.body, &tr))
	require.Equal(t, "waiting_for_first_release", tr.Evaluator.Status, "a withdrawn release's scores are not shown")
	require.Empty(t, tr.Evaluator.ActionScores)

	// The whole history replays to the same releases and scores.
	before := dumpTables(t, e, "rm_evaluator_releases", "rm_evaluator_scores", "rm_evaluator_scoring", "rm_evaluator_benchmarks")
	require.NotEmpty(t, before["rm_evaluator_scoring"])
	_, err = readmodel.New(e.pool, e.blobs, nil).Replay(ctx, eventstore.New(e.pool, e.blobs))
	require.NoError(t, err)
	require.Equal(t, before, dumpTables(t, e, "rm_evaluator_releases", "rm_evaluator_scores", "rm_evaluator_scoring", "rm_evaluator_benchmarks"))

	// Deleting a trace the candidate trained on erases it (issue 37): the
	// candidate's stored dataset, which quotes it in clear, is deleted.
	stored, err := e.blobs.Get(ctx, req.Candidate.DatasetKey)
	require.NoError(t, err)
	r = e.do(t, "DELETE", "/api/v1/rm/traces/"+trainTrace, nil)
	require.Equal(t, http.StatusNoContent, r.status, string(r.body))
	ok, err := e.blobs.Exists(ctx, req.Candidate.DatasetKey)
	require.NoError(t, err)
	require.False(t, ok, "the candidate dataset quoting the erased trace is deleted")
	// The dataset also carries the benchmark items' text: deleting a
	// trace only a benchmark item quotes deletes it too.
	require.NoError(t, e.blobs.Put(ctx, req.Candidate.DatasetKey, stored))
	r = e.do(t, "DELETE", "/api/v1/rm/traces/"+res.Benchmark.Items[0].TraceID, nil)
	require.Equal(t, http.StatusNoContent, r.status, string(r.body))
	ok, err = e.blobs.Exists(ctx, req.Candidate.DatasetKey)
	require.NoError(t, err)
	require.False(t, ok, "the candidate dataset quoting the erased benchmark trace is deleted")
}

// dumpTables renders each table's rows as JSON, in a stable order.
func dumpTables(t *testing.T, e *opsEnv, tables ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range tables {
		rows, err := e.pool.Query(context.Background(), "SELECT row_to_json(x)::text FROM "+table+" x ORDER BY 1")
		require.NoError(t, err)
		lines := []string{}
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			lines = append(lines, s)
		}
		rows.Close()
		out[table] = lines
	}
	return out
}
