package rewardmodels_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

func compared(t *testing.T, s *traces.State, id, stepID, choice string) {
	t.Helper()
	raw, err := json.Marshal(events.ComparisonReviewedV1{ComparisonID: id, TraceID: s.ID, TraceRevision: 1, StepID: stepID, ReviewerID: "rev",
		Source: "finding", FindingID: "f-" + id, Context: "user: q " + s.ID,
		Left:  events.ComparisonSide{Kind: events.SideOriginal, Action: "assistant: answer " + s.ID},
		Right: events.ComparisonSide{Kind: events.SideAlternative, Action: "assistant: better " + s.ID}, Choice: choice})
	require.NoError(t, err)
	s.Apply(events.Envelope{Type: events.ComparisonReviewed, Version: s.Version + 1, Payload: raw})
}

// A decided comparison is a pair for personal models too, with its
// provenance; ties and comparisons of steps the trace no longer has make
// none, and explicit-only training ignores them.
func TestComparisonPairs(t *testing.T) {
	t.Parallel()
	a, b := state("a", nil), state("b", nil)
	compared(t, &a, "c1", "a-a", events.ChoiceRight)
	compared(t, &a, "c2", "a-a", events.ChoiceTie)
	compared(t, &a, "c3", "gone", events.ChoiceLeft)
	compared(t, &b, "c4", "b-a", events.ChoiceLeft)
	pairs := rewardmodels.ComparisonPairs([]traces.State{a, b}, 1)
	require.Len(t, pairs, 2)
	require.Equal(t, "user: q a\nassistant: better a", pairs[0].Chosen)
	require.Equal(t, "user: q a\nassistant: answer a", pairs[0].Rejected)
	require.Equal(t, rewardmodels.SourceReviewedComparison, pairs[0].Source)
	require.Equal(t, []string{"c1"}, pairs[0].ComparisonIDs)
	require.Equal(t, []string{"f-c1"}, pairs[0].FindingIDs)
	require.Equal(t, map[string]int{"a": 1}, pairs[0].TraceRevisions)
	require.Equal(t, "user: q b\nassistant: answer b", pairs[1].Chosen)

	v3 := rewardmodels.ComparisonPairs([]traces.State{a}, 3)
	require.Equal(t, "### Context\nuser: q a\n### Action\nassistant: better a", v3[0].Chosen)

	ds, err := rewardmodels.BuildDatasetFrom(rewardmodels.DatasetInputs{ModelID: "m", Attempt: 1, Selected: []traces.State{a, b}, All: []traces.State{a, b},
		Config: events.TrainingConfig{AnnotationSource: events.SourceFeedback, InputVersion: 1}})
	require.NoError(t, err)
	require.Len(t, ds.Pairs, 2)
	_, err = rewardmodels.BuildDatasetFrom(rewardmodels.DatasetInputs{ModelID: "m", Attempt: 1, Selected: []traces.State{a, b}, All: []traces.State{a, b},
		Config: events.TrainingConfig{AnnotationSource: events.SourceExplicit, InputVersion: 1}})
	require.Error(t, err, "explicit ratings only: no comparison pairs, too few to train")
}
