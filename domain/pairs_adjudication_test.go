package domain

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdjudicationSupersedesMembersRatings: an adjudicated target counts
// its adjudication alone — the members' ratings there are not summed,
// whatever they were — and other targets still sum their ratings.
func TestAdjudicationSupersedesMembersRatings(t *testing.T) {
	t.Parallel()
	traces := pairTraces()
	adj := func(id, trace, step string, rating int) Rating {
		x := r(id, trace, step, rating)
		x.Adjudicated = true
		return x
	}
	// t1: two members +1 (sum +2); t2: one −1. Without adjudication t1 is
	// chosen and t2 rejected.
	members := []Rating{r("a1", "t1", "", 1), r("b1", "t1", "", 1), r("a2", "t2", "", -1)}
	before := BuildPairs(traces, members, 0)
	require.Len(t, before, 1)
	require.Equal(t, []string{"t1", "t2"}, before[0].TraceIDs)

	// An admin adjudicates t1 as −1 (the two +1 no longer count) and t2 as
	// +1: the preference turns around, and its provenance is the
	// adjudications alone.
	after := BuildPairs(traces, append(members, adj("x1", "t1", "", -1), adj("x2", "t2", "", 1)), 0)
	require.Len(t, after, 1)
	require.Equal(t, []string{"t2", "t1"}, after[0].TraceIDs)
	require.Equal(t, []string{"x1", "x2"}, after[0].AnnotationIDs)

	// An adjudicated trace does not touch its steps' ratings.
	step := BuildPairs(traces, append(members, adj("x1", "t1", "", -1), r("s1", "t1", "t1-4", 1), r("s2", "t2", "t2-1", -1)), 0)
	var steps int
	for _, p := range step {
		if p.Granularity == GranularityStep {
			steps++
			require.Equal(t, []string{"s1", "s2"}, p.AnnotationIDs)
		}
	}
	require.Equal(t, 1, steps)
}
