package domain

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBuildPairsSkipsThinkingTargets: a rating on a step marked Thinking
// makes no pair, as one on a system step does not.
func TestBuildPairsSkipsThinkingTargets(t *testing.T) {
	tr := func(id string) PairTrace {
		return PairTrace{ID: id, Steps: []PairStep{{ID: id + "u", Role: RoleUser, Content: "q"},
			{ID: id + "t", Role: RoleAssistant, Content: "hmm " + id, Thinking: true}, {ID: id + "a", Role: RoleAssistant, Content: "a " + id}}}
	}
	pairs := BuildPairs([]PairTrace{tr("x"), tr("y")}, []Rating{
		{AnnotationID: "1", TraceID: "x", StepID: "xt", Rating: 1}, {AnnotationID: "2", TraceID: "y", StepID: "yt", Rating: -1},
		{AnnotationID: "3", TraceID: "x", StepID: "xa", Rating: 1}, {AnnotationID: "4", TraceID: "y", StepID: "ya", Rating: -1},
	}, 0)
	require.Len(t, pairs, 1)
	require.Equal(t, []string{"3", "4"}, pairs[0].AnnotationIDs)
	require.True(t, IsThinking(map[string]any{"thinking": true}))
	require.False(t, IsThinking(map[string]any{"thinking": "true"}))
}
