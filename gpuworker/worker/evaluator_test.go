package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/gpuworker/train"
	"github.com/criticml/critic/handlers/workerapi"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
)

// evaluatorWorld is the API's command side and worker service over a real
// PostgreSQL event store and a local blob store, with a feedback model
// configured (so corrections become findings a reviewer compares).
type evaluatorWorld struct {
	cmds  *commands.Commands
	store *eventstore.Store
	blobs *blob.Local
	srv   *httptest.Server
	pool  *pgxpool.Pool
	base  string
	data  string
}

func newEvaluatorWorld(t *testing.T) *evaluatorWorld {
	t.Helper()
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	pool := pgtest.NewPool(t)
	store := eventstore.New(pool, blobs)
	w := &evaluatorWorld{cmds: commands.New(store, commands.WithFeedbackModel("openai/test", "")), store: store, blobs: blobs, pool: pool,
		base: writeTinyBase(t), data: t.TempDir()}
	mux := http.NewServeMux()
	workerapi.New(workerapi.Config{Cmds: w.cmds, Token: testToken, Lease: 30 * time.Second}).Register(mux)
	w.srv = httptest.NewServer(mux)
	t.Cleanup(w.srv.Close)
	return w
}

// worker returns a worker whose trainer uses lr (the spec's 1e-5 cannot
// move a tiny random model in a few steps; a test picks what it needs).
func (w *evaluatorWorld) worker(t *testing.T, id string, lr float64, epochs int) *Worker {
	return w.workerWith(t, id, func(o *train.Options) { o.LR, o.Epochs = lr, epochs })
}

// workerWith returns a worker whose trainer options are set by opts.
func (w *evaluatorWorld) workerWith(t *testing.T, id string, opts func(*train.Options)) *Worker {
	t.Helper()
	wk, err := New(Config{Client: NewClient(w.srv.URL, testToken, id), Blobs: w.blobs, DataDir: w.data, Log: testLogger(t),
		TrainOptions: opts})
	require.NoError(t, err)
	t.Cleanup(wk.Close)
	return wk
}

// groupsFor names a trace group for each of n traces of owner so that
// exactly inBench of them (0 < inBench ≤ n), spread evenly so that their
// numbers interleave with the training side's, land on the benchmark side
// of the fixed split (evaluator.InBenchmark). Owner and trace ids are
// random per run, so without explicit groups the benchmark's size and
// membership would vary from run to run; with them every run freezes the
// same shape.
func groupsFor(owner string, n, inBench int) []string {
	out := make([]string, 0, n)
	j := 0
	for i := range n {
		want := i%(n/inBench) == 0 && i/(n/inBench) < inBench
		for ; evaluator.InBenchmark(owner+"/g"+fmt.Sprint(j)) != want; j++ {
		}
		out = append(out, "g"+fmt.Sprint(j))
		j++
	}
	return out
}

// reviewedAccount imports n corrected conversations for a new account,
// inBench of them in benchmark-side trace groups (groupsFor), runs a feedback
// extraction over them through the worker commands (one finding with an
// alternative each, as a scripted classifier and reviewer would answer) and
// reviews every comparison, preferring the alternative. Every text is fixed
// by tag and index (the correct sort is the alternative), so the models see
// the same data in every run; tag appears in every text of the account.
func (w *evaluatorWorld) reviewedAccount(t *testing.T, name, tag string, n, inBench int) (commands.Actor, []string) {
	t.Helper()
	ctx := context.Background()
	u, err := w.cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: name})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	var lines []string
	for i, g := range groupsFor(u.UserID, n, inBench) {
		lines = append(lines, fmt.Sprintf(`{"id":"%s-%d","metadata":{"domain":"math","group":"%s"},"steps":[{"role":"user","content":"Sort %d,1,2 for %s"},{"role":"assistant","content":"%d,2,1"},{"role":"user","content":"No, that's the wrong order."}]}`,
			tag, i, g, i+3, tag, i+3))
	}
	imp, err := w.cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(strings.Join(lines, "\n"))}})
	require.NoError(t, err)
	require.Len(t, imp.TraceIDs, n)
	sorted := map[string]string{} // trace id → the correct answer
	for i, id := range imp.TraceIDs {
		sorted[id] = fmt.Sprintf("1,2,%d", i+3)
	}
	req, err := w.cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: name, TraceIDs: imp.TraceIDs}})
	require.NoError(t, err)
	_, err = w.cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	claim, err := w.cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "extractor", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	raw, err := w.blobs.Get(ctx, claim.InputsKey)
	require.NoError(t, err)
	var in jobs.ExtractionInputs
	require.NoError(t, json.Unmarshal(raw, &in))
	var fs []events.Finding
	for _, tr := range in.Traces {
		tg := feedback.Targets(tr)[0]
		id, quote, alt := tg.Evidence[0].ID, "wrong order", sorted[tr.ID]
		require.NotEmpty(t, alt, "trace %s is one of the import's", tr.ID)
		f, review, _ := feedback.FromFeedback(tg, feedback.FeedbackAnswer{Label: "negative", Confidence: "high", About: "agent",
			EvidenceID: &id, EvidenceQuote: &quote, Alternative: &alt, Reason: "scripted"}, "openai/test", feedback.ConfigHash(feedback.DefaultCriteria))
		require.True(t, review)
		want := "B"
		if !feedback.OriginalFirst(tg.TraceID, tg.StepID) {
			want = "A"
		}
		feedback.ApplyReview(&f, tg, feedback.ReviewAnswer{Preferred: want, Grounded: true})
		require.Equal(t, events.OutcomePair, f.Outcome)
		_, err = w.cmds.RecordFeedback.Handle(ctx, commands.RecordFeedback{WorkerID: "extractor", ModelID: req.ModelID, Feedback: events.RewardModelFeedbackExtractedV1{Attempt: 1, TraceID: tr.ID,
			TraceRevision: tr.Revision, ClassifierModel: "openai/test", PromptVersion: feedback.PromptVersion,
			ConfigHash: feedback.ConfigHash(feedback.DefaultCriteria), Targets: 1, Findings: []events.Finding{f}}})
		require.NoError(t, err)
		fs = append(fs, f)
	}
	_, err = w.cmds.FinishExtraction.Handle(ctx, commands.FinishExtraction{WorkerID: "extractor", ModelID: req.ModelID, Attempt: 1})
	require.NoError(t, err)
	for _, f := range fs {
		left, _ := comparisons.Sides(actor.UserID, f.ID, f.OriginalAction, *f.AlternativeAction)
		choice := events.ChoiceLeft
		if left.Kind == events.SideOriginal {
			choice = events.ChoiceRight
		}
		_, err := w.cmds.ReviewComparison.Handle(ctx, commands.ReviewComparison{Actor: actor, Input: commands.ReviewComparisonInput{ModelID: req.ModelID, FindingID: f.ID,
			Verdict: comparisons.Verdict{Left: left.Kind, Choice: choice}}})
		require.NoError(t, err)
	}
	return actor, imp.TraceIDs
}

func (w *evaluatorWorld) dataset(t *testing.T, key string) jobs.EvaluatorDataset {
	t.Helper()
	raw, err := w.blobs.Get(context.Background(), key)
	require.NoError(t, err)
	var ds jobs.EvaluatorDataset
	require.NoError(t, json.Unmarshal(raw, &ds))
	return ds
}

func (w *evaluatorWorld) candidate(t *testing.T, id string) *evaluator.Candidate {
	t.Helper()
	s, err := w.cmds.Streams.EvaluatorState(context.Background())
	require.NoError(t, err)
	c := s.Candidate(id)
	require.NotNil(t, c)
	return c
}

// TestEvaluatorBootstrapTrainReleaseRollback is the shared evaluator's
// bootstrap on a tiny base, through the real worker service and worker:
// reviewed comparisons from two accounts (one opted out), a frozen
// benchmark, a candidate trained by the worker on contributed supervision
// only (the opted-out account's data and the benchmark's trace groups are
// provably absent from its dataset; every pair is human supervision),
// released because it beats the incumbent (none: chance) overall; a second
// candidate that regresses on the populated domain slice is refused with
// that gate and changes nothing; a rollback withdraws the release; and the
// stream's history rebuilds to the same datasets and releases.
func TestEvaluatorBootstrapTrainReleaseRollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newEvaluatorWorld(t)
	stamp := time.Now().Format("150405.000000")
	// 10 of alice's 30 traces are benchmark groups; bob's 12 are 4 and 8.
	alice, aliceTraces := w.reviewedAccount(t, "alice"+stamp, "alice", 30, 10)
	bob, bobTraces := w.reviewedAccount(t, "bob"+stamp, "bob", 12, 4)
	for _, id := range aliceTraces {
		_, err := w.cmds.SetContribution.Handle(ctx, commands.SetContribution{Actor: alice, TraceID: id, Contribute: true})
		require.NoError(t, err)
	}
	for _, id := range bobTraces { // opted in, then out again
		_, err := w.cmds.SetContribution.Handle(ctx, commands.SetContribution{Actor: bob, TraceID: id, Contribute: true})
		require.NoError(t, err)
		_, err = w.cmds.SetContribution.Handle(ctx, commands.SetContribution{Actor: bob, TraceID: id})
		require.NoError(t, err)
	}
	isBob := map[string]bool{}
	for _, id := range bobTraces {
		isBob[id] = true
	}

	_, err := w.cmds.RequestCandidate.Handle(ctx, commands.RequestCandidate{BaseModel: w.base})
	var conflict *domain.ConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, "no_benchmark", conflict.Code, "a candidate needs a frozen benchmark to be tested on")

	_, skip, err := w.cmds.ScheduledCandidate.Handle(ctx, commands.ScheduledCandidate{Base: w.base})
	require.NoError(t, err)
	require.Contains(t, skip, "no benchmark is frozen yet", "the schedule waits for a benchmark")

	bench, err := w.cmds.FreezeBenchmark.Handle(ctx, commands.FreezeBenchmark{Operator: "op"})
	require.NoError(t, err)
	inBench := map[string]bool{}
	for _, it := range bench.Benchmark.Items {
		inBench[it.TraceID] = true
	}
	require.Len(t, bench.Benchmark.Items, 10, "alice's benchmark-side groups, one reviewed comparison each; bob opted out")
	for _, it := range bench.Benchmark.Items {
		require.Equal(t, "math", it.Slices[evaluator.SliceDomain])
		require.Contains(t, it.Chosen, "for alice")
	}

	// Candidate 1: requested, its dataset checked, trained by the worker.
	req, err := w.cmds.RequestCandidate.Handle(ctx, commands.RequestCandidate{BaseModel: w.base, Epochs: 1, Operator: "op"})
	require.NoError(t, err)
	c1 := req.Candidate
	require.Equal(t, 0, c1.IncumbentRelease)
	require.Equal(t, 1, c1.Owners, "only the contributing account supplies data")
	ds := w.dataset(t, c1.DatasetKey)
	require.Len(t, ds.Pairs, c1.NumPairs)
	require.Len(t, ds.Benchmark, len(bench.Benchmark.Items))
	require.Equal(t, 2*(len(aliceTraces)-len(inBench)), len(ds.Pairs), "a reviewed comparison and a correction per training-side trace")
	for _, p := range ds.Pairs {
		require.Len(t, p.TraceIDs, 1)
		require.False(t, isBob[p.TraceIDs[0]], "the opted-out account's data is absent from the candidate's dataset")
		require.False(t, inBench[p.TraceIDs[0]], "benchmark trace groups never train")
		require.NotContains(t, p.Chosen+p.Rejected, "for bob", "no text of the opted-out account trains")
		require.Contains(t, []string{evaluator.PairReviewedComparison, evaluator.PairCorrection, evaluator.PairExplicitRating}, p.Source,
			"human supervision only: an evaluator prediction is never a label")
	}

	_, skip, err = w.cmds.ScheduledCandidate.Handle(ctx, commands.ScheduledCandidate{Base: w.base})
	require.NoError(t, err)
	require.Contains(t, skip, "is still queued", "the schedule never stacks candidates")
	w.worker(t, "w1", 3e-3, 4).Handle(jobs.TopicEvaluatorTrain)(ctx, mustJSON(t, jobs.EvaluatorTrainJob{CandidateID: c1.CandidateID}))
	_, skip, err = w.cmds.ScheduledCandidate.Handle(ctx, commands.ScheduledCandidate{Base: w.base})
	require.NoError(t, err)
	require.Contains(t, skip, "no new contributed supervision since candidate "+c1.CandidateID)
	got := w.candidate(t, c1.CandidateID)
	require.Equal(t, evaluator.CandidateSucceeded, got.Status, got.Error)
	require.Len(t, got.Trained.CandidateMargins, len(bench.Benchmark.Items))
	require.Empty(t, got.Trained.IncumbentMargins, "no incumbent before the first release")
	ok, err := w.blobs.Exists(ctx, c1.ArtifactKey)
	require.NoError(t, err)
	require.True(t, ok, "the checkpoint is in the blob store")

	// A duplicate delivery is refused by the claim and changes nothing.
	w.worker(t, "w2", 3e-3, 4).Handle(jobs.TopicEvaluatorTrain)(ctx, mustJSON(t, jobs.EvaluatorTrainJob{CandidateID: c1.CandidateID}))
	require.Equal(t, "w1", w.candidate(t, c1.CandidateID).WorkerID)

	policy := evaluator.DefaultPolicy()
	policy.MinSlice = 4 // the benchmark's one domain slice is populated
	_, rep, err := w.cmds.Streams.CandidateReport(ctx, "", policy)
	require.NoError(t, err)
	require.True(t, rep.Pass, "candidate 1 beats chance: %v (overall %+v)", rep.Reasons, rep.Overall)
	require.InDelta(t, 0.5, rep.Overall.Incumbent, 1e-9, "without a release the incumbent is chance")
	require.Greater(t, rep.Overall.Low, 0.0)
	t.Logf("overall: candidate 1 %.3f over %d items, interval [%.3f, %.3f]", rep.Overall.Candidate, rep.Overall.Items, rep.Overall.Low, rep.Overall.High)
	rel, err := w.cmds.ReleaseCandidate.Handle(ctx, commands.ReleaseCandidate{Policy: policy, By: "op"})
	require.NoError(t, err)
	require.Equal(t, 1, rel.Release.Release)
	require.Equal(t, c1.CandidateID, rel.Release.CandidateID)
	_, err = w.cmds.ReleaseCandidate.Handle(ctx, commands.ReleaseCandidate{ID: c1.CandidateID, Policy: policy, By: "op"})
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, "already_released", conflict.Code)

	// Automatic scoring: a trace imported while release 1 is live is
	// scored by it, every action with the system instructions and the
	// evaluation context in its input; a duplicate job records nothing.
	imp, err := w.cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: alice, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(`{"id":"auto","metadata":{"evaluation_context":{"task":"sort ascending"}},` +
		`"steps":[{"role":"system","content":"Sort numbers ascending."},{"role":"user","content":"Sort 9,1,2"},{"role":"assistant","content":"","tool_name":"sort","tool_input":{"xs":[9,1,2]}},` +
		`{"role":"tool","content":"1,2,9"},{"role":"assistant","content":"1,2,9"}]}`)}})
	require.NoError(t, err)
	autoID := imp.TraceIDs[0]
	sc, err := w.cmds.ClaimEvaluatorScoring.Handle(ctx, commands.ClaimEvaluatorScoring{TraceID: autoID})
	require.NoError(t, err)
	require.Equal(t, 1, sc.Release)
	require.Len(t, sc.Inputs, 2, "the tool call and the answer")
	require.True(t, strings.HasPrefix(sc.Inputs[0].Text, "system: Sort numbers ascending.\nevaluation_context: {\"task\":\"sort ascending\"}\nuser: Sort 9,1,2\nassistant: [tool_call] sort("), sc.Inputs[0].Text)
	require.NotContains(t, sc.Inputs[0].Text, "tool: 1,2,9", "an action is scored on its prior context only")
	scorer := w.worker(t, "scorer", 3e-3, 1)
	scorer.Handle(jobs.TopicEvaluatorScore)(ctx, mustJSON(t, jobs.EvaluatorScoreJob{TraceID: autoID}))
	scorer.Handle(jobs.TopicEvaluatorScore)(ctx, mustJSON(t, jobs.EvaluatorScoreJob{TraceID: autoID}))
	scored := scoredEvents(t, w, autoID)
	require.Len(t, scored, 1, "a duplicate job is refused by the claim")
	require.Equal(t, 1, scored[0].Release)
	require.Equal(t, 1, scored[0].TraceRevision)
	require.Len(t, scored[0].Scores, 2)
	for i, a := range scored[0].Scores {
		require.Equal(t, sc.Inputs[i].StepID, a.StepID)
		require.True(t, a.Credit >= -1 && a.Credit <= 1)
	}

	// Candidate 2 regresses by construction: its worker's trainer swaps
	// every pair's chosen and rejected (a labelling bug), so it learns the
	// opposite preference with candidate 1's settings and ranks the math
	// slice worse than release 1 whichever items the slice holds. (A
	// near-untrained candidate is no regression by construction: the random
	// base ranks a few items right by chance, sometimes all of them.)
	req2, err := w.cmds.RequestCandidate.Handle(ctx, commands.RequestCandidate{BaseModel: w.base, Operator: "op"})
	require.NoError(t, err)
	require.Equal(t, 1, req2.Candidate.IncumbentRelease)
	require.Equal(t, c1.ArtifactKey, req2.Candidate.IncumbentArtifactKey)
	w.workerWith(t, "w1", func(o *train.Options) {
		o.LR, o.Epochs = 3e-3, 4
		for i, p := range o.Pairs {
			o.Pairs[i].Chosen, o.Pairs[i].Rejected = p.Rejected, p.Chosen
		}
	}).Handle(jobs.TopicEvaluatorTrain)(ctx, mustJSON(t, jobs.EvaluatorTrainJob{CandidateID: req2.Candidate.CandidateID}))
	c2 := w.candidate(t, req2.Candidate.CandidateID)
	require.Equal(t, evaluator.CandidateSucceeded, c2.Status, c2.Error)
	_, rep2, err := w.cmds.Streams.CandidateReport(ctx, "", policy)
	require.NoError(t, err)
	require.False(t, rep2.Pass)
	var mathSlice *evaluator.Comparison
	for i := range rep2.Slices {
		if rep2.Slices[i].Name == "domain=math" {
			mathSlice = &rep2.Slices[i]
		}
	}
	require.NotNil(t, mathSlice, "the benchmark has a domain slice: %+v", rep2.Slices)
	t.Logf("math slice: release 1 %.3f, candidate 2 %.3f over %d items", mathSlice.Incumbent, mathSlice.Candidate, mathSlice.Items)
	require.True(t, mathSlice.Populated && mathSlice.Regressed, "candidate 2 regresses on the math slice: %+v", *mathSlice)
	for id, m := range w.candidate(t, c1.CandidateID).Trained.CandidateMargins {
		require.InDelta(t, m, c2.Trained.IncumbentMargins[id], 1e-4, "the incumbent is scored with release 1's checkpoint")
	}
	_, err = w.cmds.ReleaseCandidate.Handle(ctx, commands.ReleaseCandidate{Policy: policy, By: "op"})
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, "release_gates_failed", conflict.Code)
	require.Contains(t, err.Error(), "slice domain=math", "the failing gate is named")
	s, err := w.cmds.Streams.EvaluatorState(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, s.Live, "a refused release changes nothing")

	// Rollback: no release is live, and traces wait again.
	rb, err := w.cmds.RollbackEvaluator.Handle(ctx, commands.RollbackEvaluator{By: "op"})
	require.NoError(t, err)
	require.Equal(t, events.EvaluatorRolledBackV1{From: 1, To: 0, RolledBackBy: "op"}, rb.Rollback)
	_, err = w.cmds.RollbackEvaluator.Handle(ctx, commands.RollbackEvaluator{By: "op"})
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, "no_release", conflict.Code)
	_, err = w.cmds.ClaimEvaluatorScoring.Handle(ctx, commands.ClaimEvaluatorScoring{TraceID: aliceTraces[0]})
	require.ErrorAs(t, err, &conflict, "without a live release nothing is scored")
	require.Equal(t, "not_claimable", conflict.Code)

	// The history rebuilds: datasets from the log, releases from the
	// recorded margins and policy.
	n, err := w.cmds.Streams.VerifyCandidateDatasets(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = w.cmds.Streams.VerifyReleases(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// New contributed supervision (bob opts back in): the schedule queues
	// a candidate, which holds bob's data now.
	for _, id := range bobTraces {
		_, err := w.cmds.SetContribution.Handle(ctx, commands.SetContribution{Actor: bob, TraceID: id, Contribute: true})
		require.NoError(t, err)
	}
	res, skip, err := w.cmds.ScheduledCandidate.Handle(ctx, commands.ScheduledCandidate{Base: w.base})
	require.NoError(t, err)
	require.Empty(t, skip)
	require.Equal(t, 2, res.Candidate.Owners)
	require.Equal(t, "schedule", res.Candidate.RequestedBy)

	// A candidate whose worker died is cancelled by the operator; the
	// schedule then moves on, and a late report from that worker is refused.
	_, err = w.cmds.ClaimCandidate.Handle(ctx, commands.ClaimCandidate{WorkerID: "dead", ID: res.Candidate.CandidateID, Lease: 30 * time.Second})
	require.NoError(t, err)
	_, skip, err = w.cmds.ScheduledCandidate.Handle(ctx, commands.ScheduledCandidate{Base: w.base})
	require.NoError(t, err)
	require.Contains(t, skip, "is still running")
	_, err = w.cmds.CancelCandidate.Handle(ctx, commands.CancelCandidate{ID: res.Candidate.CandidateID, By: "op"})
	require.NoError(t, err)
	require.Equal(t, evaluator.CandidateFailed, w.candidate(t, res.Candidate.CandidateID).Status)
	_, err = w.cmds.FailCandidate.Handle(ctx, commands.FailCandidate{WorkerID: "dead", ID: res.Candidate.CandidateID, Message: "late"})
	require.ErrorAs(t, err, &conflict)
	_, err = w.cmds.CancelCandidate.Handle(ctx, commands.CancelCandidate{ID: res.Candidate.CandidateID, By: "op"})
	require.ErrorAs(t, err, &conflict, "a finished candidate cannot be cancelled")
}

// scoredEvents are the evaluator.trace_scored events of a trace's stream.
func scoredEvents(t *testing.T, w *evaluatorWorld, traceID string) []events.EvaluatorTraceScoredV1 {
	t.Helper()
	loaded, err := w.store.LoadStreams(context.Background(), []string{events.TraceStream(traceID)})
	require.NoError(t, err)
	var out []events.EvaluatorTraceScoredV1
	for _, e := range loaded[events.TraceStream(traceID)] {
		if e.Type == events.EvaluatorTraceScored {
			var p events.EvaluatorTraceScoredV1
			require.NoError(t, e.Decode(&p))
			out = append(out, p)
		}
	}
	return out
}

// A worker stopped (its context ends, as on SIGTERM) while it trains an
// evaluator candidate hands the candidate back instead of failing it: the
// candidate is queued again (evaluator.candidate_requeued.v1) and the next
// worker trains it to success.
func TestShutdownMidCandidateHandsItBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newEvaluatorWorld(t)
	alice, traces := w.reviewedAccount(t, "alice"+time.Now().Format("150405.000000"), "alice", 30, 10)
	for _, id := range traces {
		_, err := w.cmds.SetContribution.Handle(ctx, commands.SetContribution{Actor: alice, TraceID: id, Contribute: true})
		require.NoError(t, err)
	}
	_, err := w.cmds.FreezeBenchmark.Handle(ctx, commands.FreezeBenchmark{Operator: "op"})
	require.NoError(t, err)
	req, err := w.cmds.RequestCandidate.Handle(ctx, commands.RequestCandidate{BaseModel: w.base, Epochs: 1, Operator: "op"})
	require.NoError(t, err)
	id := req.Candidate.CandidateID
	msg := mustJSON(t, jobs.EvaluatorTrainJob{CandidateID: id})

	jobCtx, stop := context.WithCancel(ctx)
	defer stop()
	stopping, err := New(Config{Client: NewClient(w.srv.URL, testToken, "w-stop"), Blobs: w.blobs, DataDir: t.TempDir(), Log: testLogger(t),
		TrainOptions: func(o *train.Options) {
			progress := o.Progress
			o.Progress = func(step, total int, loss, tps float64) {
				if progress != nil {
					progress(step, total, loss, tps)
				}
				stop() // stopped mid-training
			}
		}})
	require.NoError(t, err)
	defer stopping.Close()
	require.False(t, stopping.Handle(jobs.TopicEvaluatorTrain)(jobCtx, msg), "an interrupted job is not acknowledged")
	got := w.candidate(t, id)
	require.Equal(t, evaluator.CandidateQueued, got.Status, got.Error)
	require.Empty(t, got.Error, "a stop is no failure")
	loaded, err := w.store.LoadStreams(ctx, []string{events.EvaluatorStream})
	require.NoError(t, err)
	evs := loaded[events.EvaluatorStream]
	last := evs[len(evs)-1]
	require.Equal(t, events.EvaluatorCandidateRequeued, last.Type)
	var p events.EvaluatorCandidateRequeuedV1
	require.NoError(t, last.Decode(&p))
	require.Equal(t, events.EvaluatorCandidateRequeuedV1{CandidateID: id, WorkerID: "w-stop", Reason: events.RequeueHandedBack,
		Detail: "worker w-stop is shutting down"}, p)

	require.True(t, w.worker(t, "w-next", 3e-3, 1).Handle(jobs.TopicEvaluatorTrain)(ctx, msg))
	got = w.candidate(t, id)
	require.Equal(t, evaluator.CandidateSucceeded, got.Status, got.Error)
	require.Equal(t, "w-next", got.WorkerID)
}
