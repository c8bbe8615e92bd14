package domain

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// pairTraces: t1 is the refund trace (system, user, tool call, tool result,
// response); t2 a user/response exchange; t3 a second tool call.
func pairTraces() []PairTrace {
	return []PairTrace{
		refundTrace(),
		{ID: "t2", Steps: []PairStep{
			{ID: "t2-0", Role: RoleUser, Content: "hi"},
			{ID: "t2-1", Role: RoleAssistant, Content: "hello <b>"},
		}},
		{ID: "t3", Steps: []PairStep{
			{ID: "t3-0", Role: RoleUser, Content: "find x"},
			{ID: "t3-1", Role: RoleAssistant, ToolName: "search", ToolInput: map[string]any{"q": "x"}},
		}},
	}
}

const (
	t2Full   = "user: hi\nassistant: hello <b>"
	t3Full   = "user: find x\nassistant: [tool_call] search({\"q\":\"x\"})"
	t2UpTo0  = "user: hi"
	t1UpTo4  = refundFull
	t1UpTo2  = refundUpToCall
	t3UpTo1  = t3Full
	t2UpTo1  = t2Full
	t1Traced = refundFull
)

func r(id, trace, step string, rating int) Rating {
	return Rating{AnnotationID: id, TraceID: trace, StepID: step, Rating: rating}
}

func sortPairs(p []Pair) []Pair {
	out := append([]Pair(nil), p...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Chosen != out[j].Chosen {
			return out[i].Chosen < out[j].Chosen
		}
		return out[i].Rejected < out[j].Rejected
	})
	return out
}

func TestBuildPairsRules(t *testing.T) {
	t.Parallel()
	labelErr := r("r3", "t2", "", 1)
	labelErr.LabelError = true
	for _, tc := range []struct {
		name    string
		ratings []Rating
		want    []Pair
	}{
		{"trace chosen against trace rejected",
			[]Rating{r("r1", "t1", "", 1), r("r2", "t2", "", -1)},
			[]Pair{{Chosen: t1Traced, Rejected: t2Full, TraceIDs: []string{"t1", "t2"}, Granularity: "trace", AnnotationIDs: []string{"r1", "r2"}}}},
		{"label errors are dropped",
			[]Rating{r("r1", "t1", "", 1), r("r2", "t2", "", -1), labelErr},
			[]Pair{{Chosen: t1Traced, Rejected: t2Full, TraceIDs: []string{"t1", "t2"}, Granularity: "trace", AnnotationIDs: []string{"r1", "r2"}}}},
		{"a label error alone makes no target",
			[]Rating{r("r1", "t1", "", 1), labelErr},
			nil},
		{"ratings that cancel to zero make no target",
			[]Rating{r("r1", "t1", "", 1), r("r2", "t1", "", -1), r("r3", "t2", "", -1)},
			nil},
		{"the sum decides and every summed annotation is provenance",
			[]Rating{r("r3", "t1", "", -1), r("r1", "t1", "", 1), r("r2", "t1", "", 1), r("r4", "t2", "", -1)},
			[]Pair{{Chosen: t1Traced, Rejected: t2Full, TraceIDs: []string{"t1", "t2"}, Granularity: "trace", AnnotationIDs: []string{"r1", "r2", "r3", "r4"}}}},
		{"trace and step targets are never paired",
			[]Rating{r("r1", "t1", "", 1), r("r2", "t2", "t2-1", -1)},
			nil},
		{"a step target includes earlier steps but not later ones",
			[]Rating{r("r1", "t1", "t1-2", 1), r("r2", "t1", "t1-4", -1)},
			[]Pair{{Chosen: t1UpTo2, Rejected: t1UpTo4, TraceIDs: []string{"t1"}, Granularity: "step", ActionType: "mixed", AnnotationIDs: []string{"r1", "r2"}}}},
		{"tool call against tool call",
			[]Rating{r("r1", "t3", "t3-1", 1), r("r2", "t1", "t1-2", -1)},
			[]Pair{{Chosen: t3UpTo1, Rejected: t1UpTo2, TraceIDs: []string{"t3", "t1"}, Granularity: "step", ActionType: "tool_call", AnnotationIDs: []string{"r1", "r2"}}}},
		{"response against response",
			[]Rating{r("r1", "t2", "t2-1", 1), r("r2", "t1", "t1-4", -1)},
			[]Pair{{Chosen: t2UpTo1, Rejected: t1UpTo4, TraceIDs: []string{"t2", "t1"}, Granularity: "step", ActionType: "response", AnnotationIDs: []string{"r1", "r2"}}}},
		{"a rated user step is a target of type other",
			[]Rating{r("r1", "t2", "t2-0", 1), r("r2", "t2", "t2-1", -1)},
			[]Pair{{Chosen: t2UpTo0, Rejected: t2UpTo1, TraceIDs: []string{"t2"}, Granularity: "step", ActionType: "other", AnnotationIDs: []string{"r1", "r2"}}}},
		{"ratings on system steps are ignored",
			[]Rating{r("r1", "t1", "t1-0", -1), r("r2", "t2", "t2-1", 1)},
			nil},
		{"unknown traces, unknown steps, steps of another trace and non ±1 ratings are ignored",
			[]Rating{r("r1", "nope", "", -1), r("r2", "t2", "nope", -1), r("r3", "t2", "t1-4", -1), r("r4", "t2", "", 2), r("r5", "t2", "", 0), r("r6", "t1", "", 1)},
			nil},
		{"step sums are per step",
			[]Rating{r("r1", "t1", "t1-4", 1), r("r2", "t1", "t1-4", 1), r("r3", "t1", "t1-2", -1), r("r4", "t1", "t1-2", 1), r("r5", "t2", "t2-1", -1)},
			[]Pair{{Chosen: t1UpTo4, Rejected: t2UpTo1, TraceIDs: []string{"t1", "t2"}, Granularity: "step", ActionType: "response", AnnotationIDs: []string{"r1", "r2", "r5"}}}},
		{"every chosen with every rejected, per kind",
			[]Rating{r("a", "t1", "", 1), r("b", "t2", "", -1), r("c", "t3", "", -1), r("d", "t2", "t2-1", 1), r("e", "t3", "t3-1", -1)},
			[]Pair{
				{Chosen: t1Traced, Rejected: t2Full, TraceIDs: []string{"t1", "t2"}, Granularity: "trace", AnnotationIDs: []string{"a", "b"}},
				{Chosen: t1Traced, Rejected: t3Full, TraceIDs: []string{"t1", "t3"}, Granularity: "trace", AnnotationIDs: []string{"a", "c"}},
				{Chosen: t2UpTo1, Rejected: t3UpTo1, TraceIDs: []string{"t2", "t3"}, Granularity: "step", ActionType: "mixed", AnnotationIDs: []string{"d", "e"}},
			}},
	} {
		got := BuildPairs(pairTraces(), tc.ratings, 0)
		if tc.want == nil {
			require.Empty(t, got, tc.name)
			continue
		}
		require.Equal(t, sortPairs(tc.want), sortPairs(got), tc.name)
	}
}

// manyTraces: traces c0..c{n-1} rated +1 and r0..r{n-1} rated -1.
func manyTraces(n int) ([]PairTrace, []Rating) {
	var traces []PairTrace
	var ratings []Rating
	for _, side := range []struct {
		prefix string
		rating int
	}{{"c", 1}, {"r", -1}} {
		for i := range n {
			id := fmt.Sprintf("%s%d", side.prefix, i)
			traces = append(traces, PairTrace{ID: id, Steps: []PairStep{{ID: id + "-0", Role: RoleUser, Content: id}}})
			ratings = append(ratings, r("a-"+id, id, "", side.rating))
		}
	}
	return traces, ratings
}

func names(pairs []Pair) []string {
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p.Chosen[len("user: "):] + ">" + p.Rejected[len("user: "):]
	}
	return out
}

// The order after the seed-0 shuffle is part of the dataset's identity; it
// was computed independently (Python SplitMix64 + Fisher–Yates).
func TestBuildPairsShuffleIsFixed(t *testing.T) {
	t.Parallel()
	traces, ratings := manyTraces(2)
	require.Equal(t, []string{"c1>r0", "c0>r1", "c0>r0", "c1>r1"}, names(BuildPairs(traces, ratings, 0)))

	traces, ratings = manyTraces(3)
	all := names(BuildPairs(traces, ratings, 0))
	require.Equal(t, []string{"c0>r1", "c0>r0", "c1>r0", "c1>r2", "c2>r0", "c2>r2", "c0>r2", "c1>r1", "c2>r1"}, all)
	// The cap keeps a prefix of the shuffled order.
	require.Equal(t, all[:4], names(BuildPairs(traces, ratings, 4)))
}

func TestBuildPairsDefaultCap(t *testing.T) {
	t.Parallel()
	traces, ratings := manyTraces(70) // 4900 pairs
	require.Len(t, BuildPairs(traces, ratings, 0), DefaultMaxPairs)
	require.Len(t, BuildPairs(traces, ratings, -1), 4000)
	require.Len(t, BuildPairs(traces, ratings, 5000), 4900)
}

func TestBuildPairsIsDeterministic(t *testing.T) {
	t.Parallel()
	traces, ratings := manyTraces(12)
	traces = append(traces, pairTraces()...)
	ratings = append(ratings, r("x1", "t1", "t1-2", 1), r("x2", "t3", "t3-1", -1), r("x3", "t2", "t2-1", -1))
	first := MarshalPairsJSONL(BuildPairs(traces, ratings, 100))
	for range 5 {
		require.Equal(t, first, MarshalPairsJSONL(BuildPairs(traces, ratings, 100)))
	}
}

func TestMarshalPairsJSONL(t *testing.T) {
	t.Parallel()
	pairs := BuildPairs(pairTraces(), []Rating{r("a", "t2", "", 1), r("b", "t3", "", -1), r("c", "t2", "t2-1", 1), r("d", "t3", "t3-1", -1)}, 0)
	require.Len(t, pairs, 2)
	// Seed 0 leaves two pairs in built order: trace pairs first.
	got := string(MarshalPairsJSONL(pairs))
	require.Equal(t,
		`{"chosen":"user: hi\nassistant: hello <b>","rejected":"user: find x\nassistant: [tool_call] search({\"q\":\"x\"})","trace_ids":["t2","t3"],"granularity":"trace","action_type":null}`+"\n"+
			`{"chosen":"user: hi\nassistant: hello <b>","rejected":"user: find x\nassistant: [tool_call] search({\"q\":\"x\"})","trace_ids":["t2","t3"],"granularity":"step","action_type":"mixed"}`+"\n",
		got)
	require.Empty(t, MarshalPairsJSONL(nil))
}

func TestSplitMix64KnownValues(t *testing.T) {
	t.Parallel()
	// Reference outputs of SplitMix64 seeded with 0.
	g := SplitMix64{}
	require.Equal(t, uint64(0xe220a8397b1dcdaf), g.Next())
	require.Equal(t, uint64(0x6e789e6aa1b965f4), g.Next())
	require.Equal(t, uint64(0x06c45d188009454f), g.Next())
}
