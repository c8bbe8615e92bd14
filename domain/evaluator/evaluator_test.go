package evaluator_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// trace builds a trace's state from the events a user's actions append: an
// import, a step rating, a reviewed comparison, and consent.
func trace(t *testing.T, owner string, n int, contribute bool) traces.State {
	t.Helper()
	id := fmt.Sprintf("%s-t%03d", owner, n)
	s := traces.State{ID: id}
	ver := int64(0)
	apply := func(typ string, p any) {
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		ver++
		s.Apply(events.Envelope{Type: typ, Version: ver, OwnerID: owner, Payload: raw})
	}
	tool := ""
	if n%4 == 0 {
		tool = "search"
	}
	dom := []string{"billing", "shipping", "returns"}[n%3]
	apply(events.TraceImported, events.TraceImportedV1{TraceID: id, Revision: 1, SourceFormat: "stash",
		Metadata: map[string]any{"domain": dom, "agent": "support-bot"},
		Steps: []events.StepRecord{
			{ID: id + "-u", Index: 0, Step: domain.Step{Role: domain.RoleUser, Content: "question " + id}},
			{ID: id + "-a", Index: 1, Step: domain.Step{Role: domain.RoleAssistant, Content: "answer " + id, ToolName: tool}},
			{ID: id + "-u2", Index: 2, Step: domain.Step{Role: domain.RoleUser, Content: "thanks"}},
			{ID: id + "-b", Index: 3, Step: domain.Step{Role: domain.RoleAssistant, Content: "bye " + id}},
		}})
	one, minus := 1, -1
	apply(events.AnnotationAdded, events.AnnotationAddedV1{AnnotationID: id + "-r1", TraceID: id, StepID: id + "-a", Rating: &one})
	apply(events.AnnotationAdded, events.AnnotationAddedV1{AnnotationID: id + "-r2", TraceID: id, StepID: id + "-b", Rating: &minus})
	apply(events.ComparisonReviewed, events.ComparisonReviewedV1{ComparisonID: id + "-c", TraceID: id, TraceRevision: 1, StepID: id + "-a",
		ToolName: tool, ReviewerID: owner, Source: "finding", FindingID: id + "-f", Context: "user: question " + id,
		Left:   events.ComparisonSide{Kind: events.SideOriginal, Action: "assistant: answer " + id},
		Right:  events.ComparisonSide{Kind: events.SideAlternative, Action: "assistant: better " + id},
		Choice: events.ChoiceRight, Preferred: events.SideAlternative})
	if contribute {
		apply(events.TraceContributionSet, events.TraceContributionSetV1{TraceID: id, Contribute: true, Revision: 1, Via: "api"})
	}
	return s
}

// base is a tiny deployment: account "a" contributes every trace, account
// "b" opted its traces in and then out again.
func base(t *testing.T, n int) []traces.State {
	var out []traces.State
	for i := range n {
		out = append(out, trace(t, "a", i, true))
		b := trace(t, "b", i, true)
		raw, _ := json.Marshal(events.TraceContributionSetV1{TraceID: b.ID, Contribute: false, Revision: 1, Via: "api"})
		b.Apply(events.Envelope{Type: events.TraceContributionSet, Version: b.Version + 1, OwnerID: "b", Payload: raw})
		out = append(out, b)
	}
	return out
}

func TestFreezeAndDatasetRespectConsentAndTheSplit(t *testing.T) {
	t.Parallel()
	states := base(t, 200)
	b := evaluator.Freeze(1, 100, states)
	require.NotEmpty(t, b.Items)
	benchGroups := map[string]bool{}
	for _, it := range b.Items {
		require.Equal(t, "a", it.OwnerID, "an opted-out trace is never in a benchmark")
		require.True(t, evaluator.InBenchmark(it.Group))
		benchGroups[it.Group] = true
		require.NotEmpty(t, it.Slices[evaluator.SliceDomain])
		require.Equal(t, "support-bot", it.Slices[evaluator.SliceAgent])
	}
	// About BenchmarkPercent of the 200 contributing groups.
	require.InDelta(t, 60, len(benchGroups), 25)

	ds := evaluator.CandidateDataset(states, nil)
	require.NotEmpty(t, ds)
	sources := map[string]int{}
	for _, p := range ds {
		require.Equal(t, "a", p.OwnerID, "the opted-out account's data is absent")
		require.False(t, strings.Contains(p.Chosen+p.Rejected, "b-t"), "no text of an opted-out trace")
		require.False(t, benchGroups["a/"+p.TraceID], "benchmark groups never train")
		sources[p.Source]++
		// Only human supervision, each with its provenance.
		switch p.Source {
		case evaluator.PairReviewedComparison:
			require.NotEmpty(t, p.ComparisonID)
		case evaluator.PairExplicitRating:
			require.NotEmpty(t, p.AnnotationIDs)
		default:
			t.Fatalf("a pair from %q: only reviewed comparisons and explicit ratings train", p.Source)
		}
	}
	require.Equal(t, 200-len(benchGroups), sources[evaluator.PairReviewedComparison])
	require.Equal(t, 200-len(benchGroups), sources[evaluator.PairExplicitRating])

	// Frozen means frozen: the version is its items; more data freezes a
	// new version and the old one is rebuilt from the log exactly.
	more := append(append([]traces.State{}, states...), base(t, 260)[400:]...)
	b2 := evaluator.Freeze(2, 200, more)
	require.Greater(t, len(b2.Items), len(b.Items))
	require.Equal(t, b, evaluator.Freeze(1, 100, states))
}

// margins scores every benchmark item: correct (positive margin) unless
// wrong says otherwise.
func margins(b evaluator.Benchmark, wrong func(i int, it evaluator.Item) bool) evaluator.Margins {
	m := evaluator.Margins{}
	for i, it := range b.Items {
		if wrong(i, it) {
			m[it.ID] = -1
		} else {
			m[it.ID] = 1
		}
	}
	return m
}

func TestGates(t *testing.T) {
	t.Parallel()
	b := evaluator.Freeze(1, 100, base(t, 400))
	search := 0
	for _, it := range b.Items {
		if it.Slices[evaluator.SliceTool] == "search" {
			search++
		}
	}
	require.GreaterOrEqual(t, search, 30, "the tool=search slice is populated")
	p := evaluator.DefaultPolicy()

	// The first release must beat chance.
	first := margins(b, func(i int, _ evaluator.Item) bool { return i%3 == 0 })
	r := evaluator.Evaluate(b, nil, first, p)
	require.True(t, r.Pass, r.Reasons)
	require.InDelta(t, 0.5, r.Overall.Incumbent, 1e-9)

	// Candidates against that incumbent.
	regressing := margins(b, func(i int, it evaluator.Item) bool { return it.Slices[evaluator.SliceTool] == "search" && i%2 == 0 })
	r = evaluator.Evaluate(b, first, regressing, p)
	require.False(t, r.Pass, "better overall, worse on search: refused")
	require.Greater(t, r.Overall.Low, 0.0, "the overall gate alone would pass")
	require.Len(t, r.Reasons, 1, r.Reasons)
	require.Contains(t, strings.Join(r.Reasons, "\n"), "slice tool=search")
	var sl evaluator.Comparison
	for _, c := range r.Slices {
		if c.Name == "tool=search" {
			sl = c
		}
	}
	require.True(t, sl.Populated)
	require.True(t, sl.Regressed)
	require.Less(t, sl.Candidate, sl.Incumbent)

	good := margins(b, func(int, evaluator.Item) bool { return false })
	r = evaluator.Evaluate(b, first, good, p)
	require.True(t, r.Pass, r.Reasons)
	require.Greater(t, r.Overall.Low, 0.0)
	require.LessOrEqual(t, r.Overall.Low, r.Overall.Diff)
	require.GreaterOrEqual(t, r.Overall.High, r.Overall.Diff)

	// Equal to the incumbent: the interval cannot exclude zero.
	r = evaluator.Evaluate(b, first, first, p)
	require.False(t, r.Pass)
	require.Contains(t, r.Reasons[0], "does not exclude zero")

	// A regression on a slice below MinSlice does not block.
	p.MinSlice = search + 1
	r = evaluator.Evaluate(b, first, regressing, p)
	require.True(t, r.Pass, "the slice is too small to block now: %v", r.Reasons)

	// The same inputs give the same verdict, interval included (seeded).
	require.Equal(t, evaluator.Evaluate(b, first, good, evaluator.DefaultPolicy()), evaluator.Evaluate(b, first, good, evaluator.DefaultPolicy()))
}

// rollout is an attempt at prompt in a trace group, with an explicit
// verified outcome and consent.
func rollout(id, group, prompt, answer, outcome string, contribute bool) traces.State {
	s := traces.State{ID: id, OwnerID: "a", Exists: true, Revision: 1, Contribute: contribute, SourceFormat: "stash",
		Metadata: map[string]any{"group": group, "outcome": outcome, "domain": "sorting"}}
	for i, st := range []domain.Step{{Role: domain.RoleUser, Content: prompt}, {Role: domain.RoleAssistant, Content: answer}} {
		s.Steps = append(s.Steps, events.StepRecord{ID: fmt.Sprintf("%s-s%d", id, i), Index: i, Step: st})
	}
	return s
}

// Verified-outcome comparisons count as reviewed: both traces must
// contribute and sit on one side of the split; the benchmark holds the
// benchmark side's (only under the rules that count them), candidates
// train on the training side's.
func TestVerifiedOutcomesBenchmarkAndTrain(t *testing.T) {
	t.Parallel()
	var bench, train []string
	for i := 0; len(bench) < 2 || len(train) < 2; i++ {
		g := fmt.Sprintf("g%d", i)
		if evaluator.InBenchmark("a/" + g) {
			bench = append(bench, g)
		} else {
			train = append(train, g)
		}
	}
	states := []traces.State{
		rollout("b1", bench[0], "sort 3 1 2", "1 2 3", "success", true),
		rollout("b2", bench[1], "sort 3 1 2", "3 2 1", "failure", true),
		rollout("t1", train[0], "sort c a b", "a b c", "success", true),
		rollout("t2", train[1], "sort c a b", "c b a", "failure", true),
		rollout("o1", train[0], "sort 9 8", "8 9", "success", true),
		rollout("o2", train[1], "sort 9 8", "9 8", "failure", false), // did not opt in
		rollout("x1", bench[0], "sort z y", "y z", "success", true),
		rollout("x2", train[0], "sort z y", "z y", "failure", true), // across the split
	}
	b := evaluator.Freeze(1, 10, states)
	require.Len(t, b.Items, 1)
	it := b.Items[0]
	require.Equal(t, "verified_outcome", it.Source)
	require.Equal(t, "b1", it.TraceID)
	require.Equal(t, "b2", it.RejectedTraceID)
	require.Equal(t, []string{"metadata.outcome", "metadata.outcome"}, it.OutcomeFrom)
	require.Equal(t, "user: sort 3 1 2\nassistant: 1 2 3", it.Chosen)
	require.Equal(t, "user: sort 3 1 2\nassistant: 3 2 1", it.Rejected)
	require.Equal(t, map[string]string{"tool": "(response)", "domain": "sorting", "agent": "stash"}, it.Slices)
	require.Empty(t, evaluator.FreezeWith(evaluator.ItemRulesReviewed, 1, 10, states).Items, "versions frozen before verified outcomes counted rebuild without them")

	ds := evaluator.CandidateDataset(states, nil)
	require.Len(t, ds, 1)
	require.Equal(t, evaluator.TrainingPair{Chosen: "user: sort c a b\nassistant: a b c", Rejected: "user: sort c a b\nassistant: c b a",
		TraceID: "t1", OwnerID: "a", Revision: 1, Source: "verified_outcome", ComparisonID: "verified:t1/t1-s1:t2/t2-s1", RejectedTraceID: "t2"}, ds[0])
}
