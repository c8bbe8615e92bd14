package rewardmodels

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The learning report's included_in_evaluation names exactly the findings
// whose pairs the trainer's split holds out: the same split, seed 0.
func TestEvaluationFindingsFollowTheTrainingSplit(t *testing.T) {
	var ds Dataset
	for i := range 10 {
		tr := fmt.Sprintf("trace-%d", i)
		ds.Pairs = append(ds.Pairs, DatasetPair{TraceIDs: []string{tr}, FindingIDs: []string{"f-" + tr}})
		ds.Pairs = append(ds.Pairs, DatasetPair{TraceIDs: []string{tr}}) // a rating pair: no finding
	}
	ds.Pairs = append(ds.Pairs, DatasetPair{TraceIDs: []string{"trace-1", "trace-2"}, FindingIDs: []string{"f-cross"}})

	traces := make([][]string, len(ds.Pairs))
	for i, p := range ds.Pairs {
		traces[i] = p.TraceIDs
	}
	split := SplitByTrace(traces, 0)
	require.True(t, split.Usable)
	require.Len(t, split.Eval, 2, "one trace of ten is held out, with its two pairs")
	held := ds.Pairs[split.Eval[0]].TraceIDs[0]

	got := EvaluationFindings(ds)
	require.Equal(t, []string{"f-" + held}, got)
	require.NotContains(t, got, "f-cross", "a pair spanning both sides is excluded, not evaluated")

	// One source trace: no usable split, every pair trains.
	one := Dataset{Pairs: []DatasetPair{{TraceIDs: []string{"a"}, FindingIDs: []string{"f1"}}, {TraceIDs: []string{"a"}, FindingIDs: []string{"f2"}}}}
	require.Empty(t, EvaluationFindings(one))
}
