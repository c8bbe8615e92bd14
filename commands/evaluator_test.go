package commands_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/eventstore"
)

// reviewedAccount imports n corrected conversations for actor, runs a
// feedback extraction over them through the worker commands (one finding
// with an alternative each), and reviews every comparison, preferring the
// alternative. It returns the trace ids.
func reviewedAccount(t *testing.T, cmds *commands.Commands, store *eventstore.Store, actor commands.Actor, tag string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"id":"%s-%d","metadata":{"domain":"math"},"steps":[{"role":"user","content":"Sort %d,1,2"},{"role":"assistant","content":"%d,2,1"},{"role":"user","content":"No, that's the wrong order."}]}`, tag, i, i+3, i+3))
	}
	imp, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(strings.Join(lines, "\n"))}})
	require.NoError(t, err)
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: tag, TraceIDs: imp.TraceIDs}})
	require.NoError(t, err)
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	claim, err := cmds.ClaimExtraction.Handle(ctx, commands.ClaimExtraction{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	in := readInputs(t, store, claim.InputsKey)
	var fs []events.Finding
	for _, tr := range in.Traces {
		rec := finding(t, tr, "negative", "wrong order", "1,2,"+tr.ID[:4])
		_, err = cmds.RecordFeedback.Handle(ctx, commands.RecordFeedback{WorkerID: "w1", ModelID: req.ModelID, Feedback: rec})
		require.NoError(t, err)
		fs = append(fs, rec.Findings[0])
	}
	_, err = cmds.FinishExtraction.Handle(ctx, commands.FinishExtraction{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1})
	require.NoError(t, err)
	for _, f := range fs {
		left, _ := comparisons.Sides(actor.UserID, f.ID, f.OriginalAction, *f.AlternativeAction)
		choice := events.ChoiceLeft
		if left.Kind == events.SideOriginal {
			choice = events.ChoiceRight
		}
		_, err := cmds.ReviewComparison.Handle(ctx, commands.ReviewComparison{Actor: actor, Input: commands.ReviewComparisonInput{ModelID: req.ModelID, FindingID: f.ID,
			Verdict: comparisons.Verdict{Left: left.Kind, Choice: choice}}})
		require.NoError(t, err)
	}
	return imp.TraceIDs
}

// TestEvaluatorBootstrapOnATinyBase: reviewed comparisons from two
// accounts, one of which opted out; the frozen benchmark and the candidate
// dataset hold only the contributing account's data, never a benchmark
// group in training, never an evaluator prediction; a later freeze is a new
// version and every version rebuilds from the log unchanged.
func TestEvaluatorBootstrapOnATinyBase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, store, alice := setupWith(t, commands.WithFeedbackModel("openai/test", ""))
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "bob" + time.Now().Format("150405.000000")})
	require.NoError(t, err)
	bob := commands.Actor{UserID: u.UserID}

	_, err = cmds.FreezeBenchmark.Handle(ctx, commands.FreezeBenchmark{Operator: "op"})
	var conflict *domain.ConflictError
	require.ErrorAs(t, err, &conflict, "no reviewed data yet: nothing to freeze")
	require.Contains(t, err.Error(), "PUT /traces/{id}/contribution")

	aliceTraces := reviewedAccount(t, cmds, store, alice, "a", 30)
	bobTraces := reviewedAccount(t, cmds, store, bob, "b", 30)
	for _, id := range aliceTraces {
		_, err := cmds.SetContribution.Handle(ctx, commands.SetContribution{Actor: alice, TraceID: id, Contribute: true})
		require.NoError(t, err)
	}
	for _, id := range bobTraces { // opted in, then out again
		_, err := cmds.SetContribution.Handle(ctx, commands.SetContribution{Actor: bob, TraceID: id, Contribute: true})
		require.NoError(t, err)
		_, err = cmds.SetContribution.Handle(ctx, commands.SetContribution{Actor: bob, TraceID: id})
		require.NoError(t, err)
	}
	isBob := map[string]bool{}
	for _, id := range bobTraces {
		isBob[id] = true
	}

	v1, err := cmds.FreezeBenchmark.Handle(ctx, commands.FreezeBenchmark{Operator: "op"})
	require.NoError(t, err)
	require.Equal(t, 1, v1.Benchmark.Version)
	require.NotEmpty(t, v1.Benchmark.Items)
	bench := map[string]bool{}
	for _, it := range v1.Benchmark.Items {
		require.False(t, isBob[it.TraceID], "an opted-out trace is absent from the benchmark")
		require.Equal(t, alice.UserID, it.OwnerID)
		require.Equal(t, "math", it.Slices[evaluator.SliceDomain])
		require.Contains(t, it.Chosen, "assistant: 1,2,", "the reviewer preferred the alternative")
		bench[it.TraceID] = true
	}
	require.Equal(t, len(v1.Benchmark.Items), v1.Benchmark.SliceCounts[evaluator.SliceDomain]["math"])

	head, err := store.Head(ctx)
	require.NoError(t, err)
	ds, err := cmds.Streams.CandidateDatasetAsOf(ctx, head)
	require.NoError(t, err)
	require.Len(t, ds, 2*(30-len(bench)), "a reviewed comparison and a user correction per contributing training-side trace")
	sources := map[string]int{}
	for _, p := range ds {
		require.False(t, isBob[p.TraceID], "an opted-out trace's data is absent from the dataset")
		require.False(t, bench[p.TraceID], "benchmark traces never train")
		sources[p.Source]++
		switch p.Source {
		case evaluator.PairReviewedComparison:
			require.NotEmpty(t, p.ComparisonID)
		case evaluator.PairCorrection:
			require.NotEmpty(t, p.FindingID)
		default:
			t.Fatalf("a pair from %q: human supervision only, never evaluator predictions", p.Source)
		}
	}
	require.Equal(t, 30-len(bench), sources[evaluator.PairCorrection])

	// Bob opts one trace back in: the next version may include it, the
	// first never changes.
	_, err = cmds.SetContribution.Handle(ctx, commands.SetContribution{Actor: bob, TraceID: bobTraces[0], Contribute: true})
	require.NoError(t, err)
	for _, id := range bobTraces[1:] {
		_, err = cmds.SetContribution.Handle(ctx, commands.SetContribution{Actor: bob, TraceID: id, Contribute: true})
		require.NoError(t, err)
	}
	v2, err := cmds.FreezeBenchmark.Handle(ctx, commands.FreezeBenchmark{Operator: "op"})
	require.NoError(t, err)
	require.Equal(t, 2, v2.Benchmark.Version)
	require.Greater(t, len(v2.Benchmark.Items), len(v1.Benchmark.Items))
	n, err := cmds.Streams.VerifyBenchmarks(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "every version rebuilds from the log as it was frozen")
}
