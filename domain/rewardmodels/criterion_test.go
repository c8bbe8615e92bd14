package rewardmodels_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// criterionOf folds a criteria stream of the given events.
func criterionOf(t *testing.T, evs ...any) *criteria.Criterion {
	t.Helper()
	var stream []events.Envelope
	for i, p := range evs {
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		typ := events.CriterionDefined
		if _, ok := p.(events.CriterionChangedV1); ok {
			typ = events.CriterionChanged
		}
		stream = append(stream, events.Envelope{Version: int64(i + 1), Type: typ, Payload: raw})
	}
	st, err := criteria.Fold(stream)
	require.NoError(t, err)
	c, ok := st.Get("c")
	require.True(t, ok)
	return c
}

// value is a criterion value annotation on a trace's answer step ("" for
// the whole trace).
func value(s traces.State, id, criterionID, step, raw string) {
	s.Annotations[id] = &traces.Annotation{ID: id, StepID: step, CriterionID: criterionID, Value: json.RawMessage(raw), AuthorID: id}
}

// TestTrainingOnACriterionBuildsPairsFromItsValues: with
// training_config.criterion the dataset's pairs come from that criterion's
// values alone (ratings and other criteria ignored), each value weighted
// (scale v − (max+1)/2, categorical the label's score, binary ±1), summed
// per target and signed as ratings are, with the values as provenance.
func TestTrainingOnACriterionBuildsPairsFromItsValues(t *testing.T) {
	t.Parallel()
	up := 1
	scale := criterionOf(t, events.CriterionDefinedV1{CriterionID: "c", Name: "Helpful", Kind: criteria.KindScale, ScaleMax: 5, AppliesTo: criteria.AppliesToAssistant})
	a, b, c, d := state("a", &up), state("b", &up), state("c", nil), state("d", nil)
	value(a, "va1", "c", "a-a", `5`) // +2
	value(a, "va2", "c", "a-a", `2`) // -1: the sum is +1, chosen
	value(b, "vb1", "c", "b-a", `1`) // -2: rejected (its +1 ratings do not count)
	value(c, "vc1", "c", "c-a", `3`) // the middle: no preference
	value(d, "vd1", "other", "d-a", `1`)
	value(d, "vd2", "c", "d-a", `2`) // -1: rejected
	cfg := events.TrainingConfig{AnnotationSource: events.SourceExplicit, InputVersion: 1, ThinkingExcluded: true, Criterion: "c", CriterionName: "Helpful"}
	sel := []traces.State{a, b, c, d}
	ds, err := rewardmodels.BuildDatasetFrom(rewardmodels.DatasetInputs{ModelID: "m", Attempt: 1, Selected: sel, All: sel, Config: cfg, Criterion: scale})
	require.NoError(t, err)
	got := map[string][]string{}
	for _, p := range ds.Pairs {
		require.Equal(t, domain.GranularityStep, p.Granularity)
		require.Contains(t, p.Chosen, "answer "+p.TraceIDs[0])
		require.Contains(t, p.Rejected, "answer "+p.TraceIDs[1])
		got[p.TraceIDs[0]+">"+p.TraceIDs[1]] = p.AnnotationIDs
	}
	require.Equal(t, map[string][]string{"a>b": {"va1", "va2", "vb1"}, "a>d": {"va1", "va2", "vd2"}}, got)

	// The same traces without the criterion train on their ratings, as before.
	ds, err = rewardmodels.BuildDatasetFrom(rewardmodels.DatasetInputs{ModelID: "m", Attempt: 1, Selected: sel, All: sel,
		Config: events.TrainingConfig{AnnotationSource: events.SourceExplicit, InputVersion: 1, ThinkingExcluded: true}})
	var few *rewardmodels.TooFewPairsError
	require.ErrorAs(t, err, &few, "only +1 ratings: nothing rejected")

	// Binary and categorical criteria on whole traces; a renamed label's
	// stored value keeps its score.
	binary := criterionOf(t, events.CriterionDefinedV1{CriterionID: "c", Name: "Correct", Kind: criteria.KindBinary, AppliesTo: criteria.AppliesToTrace})
	tone := criterionOf(t,
		events.CriterionDefinedV1{CriterionID: "c", Name: "Tone", Kind: criteria.KindCategorical, AppliesTo: criteria.AppliesToTrace,
			Labels: []events.CriterionLabel{{Name: "good", Score: 1}, {Name: "meh"}, {Name: "bad", Score: -1}}},
		events.CriterionChangedV1{CriterionID: "c", Name: "Tone", Labels: []events.CriterionLabel{{Name: "polite", Score: 1}, {Name: "meh"}, {Name: "rude", Score: -1}}})
	for _, tc := range []struct {
		c             *criteria.Criterion
		yes, no, none string
	}{{binary, `"yes"`, `"no"`, ``}, {tone, `"good"`, `"rude"`, `"meh"`}} {
		x, y, w, z := state("x", nil), state("y", nil), state("w", nil), state("z", nil)
		value(x, "vx", "c", "", tc.yes)
		value(y, "vy", "c", "", tc.no)
		value(w, "vw", "c", "", tc.no)
		if tc.none != "" {
			value(z, "vz", "c", "", tc.none)
		}
		sel := []traces.State{x, y, w, z}
		ds, err := rewardmodels.BuildDatasetFrom(rewardmodels.DatasetInputs{ModelID: "m", Attempt: 1, Selected: sel, All: sel, Criterion: tc.c,
			Config: events.TrainingConfig{AnnotationSource: events.SourceExplicit, InputVersion: 1, Criterion: "c", CriterionName: tc.c.Name}})
		require.NoError(t, err, tc.c.Name)
		require.Len(t, ds.Pairs, 2, tc.c.Name)
		for _, p := range ds.Pairs {
			require.Equal(t, domain.GranularityTrace, p.Granularity)
			require.Equal(t, "x", p.TraceIDs[0], "x is chosen over y and w, z is neither")
			require.NotEqual(t, "z", p.TraceIDs[1])
		}
	}

	// Too few values says so, naming the criterion.
	x := state("x", nil)
	value(x, "vx", "c", "", `"yes"`)
	_, err = rewardmodels.BuildDatasetFrom(rewardmodels.DatasetInputs{ModelID: "m", Attempt: 1, Selected: []traces.State{x}, All: []traces.State{x}, Criterion: binary,
		Config: events.TrainingConfig{AnnotationSource: events.SourceExplicit, InputVersion: 1, Criterion: "c", CriterionName: "Correct"}})
	require.ErrorAs(t, err, &few)
	require.Contains(t, err.Error(), `criterion "Correct"`)
}
