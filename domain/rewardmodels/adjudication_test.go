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

// teamTrace is a trace whose whole-trace rating each member gave (member
// → rating), folded from its events like the command side does.
func teamTrace(t *testing.T, id string, ratings map[string]int, adjudicated *int) traces.State {
	t.Helper()
	var s traces.State
	apply := func(typ string, p any) {
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		require.NoError(t, s.Apply(events.Envelope{Stream: events.TraceStream(id), Version: s.Version + 1, OwnerID: "acct", Type: typ, Payload: raw}))
	}
	apply(events.TraceImported, events.TraceImportedV1{TraceID: id, Revision: 1, Steps: []events.StepRecord{
		{ID: id + "-u", Index: 0, Step: domain.Step{Role: domain.RoleUser, Content: "q " + id}},
		{ID: id + "-a", Index: 1, Step: domain.Step{Role: domain.RoleAssistant, Content: "answer " + id}},
	}})
	for member, r := range ratings {
		apply(events.AnnotationAdded, events.AnnotationAddedV1{AnnotationID: id + "-" + member, TraceID: id, Rating: &r, AuthorID: member, TraceRevision: 1})
	}
	if adjudicated != nil {
		apply(events.AnnotationAdjudicated, events.AnnotationAdjudicatedV1{AdjudicationID: id + "-adj", TraceID: id, Rating: *adjudicated,
			Reason: "the guideline says so", By: "admin", TraceRevision: 1})
	}
	return s
}

// pairsOf lists a dataset's pairs as "chosen>rejected" trace ids, sorted.
func pairsOf(ds rewardmodels.Dataset) map[string][]string {
	out := map[string][]string{}
	for _, p := range ds.Pairs {
		k := p.TraceIDs[0] + ">" + p.TraceIDs[len(p.TraceIDs)-1]
		out[k] = p.AnnotationIDs
	}
	return out
}

// TestAdjudicationAndExcludeDisputedChangeTheDataset: a target the
// members dispute sums their ratings like any other (spec rule) unless an
// admin adjudicated it — then the adjudication alone counts, with its id
// as the provenance — and training_config.exclude_disputed leaves out
// disputed targets nobody adjudicated.
func TestAdjudicationAndExcludeDisputedChangeTheDataset(t *testing.T) {
	t.Parallel()
	up, down := 1, -1
	build := func(cfg events.TrainingConfig, sel ...traces.State) map[string][]string {
		t.Helper()
		cfg.AnnotationSource, cfg.InputVersion = events.SourceExplicit, 1
		ds, err := rewardmodels.BuildDatasetFrom(rewardmodels.DatasetInputs{ModelID: "m", Attempt: 1, Selected: sel, All: sel, Config: cfg})
		require.NoError(t, err)
		return pairsOf(ds)
	}
	a := teamTrace(t, "a", map[string]int{"ann": 1, "bob": 1}, nil)                 // agreed: chosen
	b := teamTrace(t, "b", map[string]int{"ann": -1, "bob": -1}, nil)               // agreed: rejected
	c := teamTrace(t, "c", map[string]int{"ann": 1, "bob": 1, "cat": -1}, nil)      // disputed, sums to +1: chosen
	d := teamTrace(t, "d", map[string]int{"ann": 1, "bob": -1}, nil)                // disputed, sums to 0: neither
	cAdj := teamTrace(t, "c", map[string]int{"ann": 1, "bob": 1, "cat": -1}, &down) // disputed, adjudicated −1
	dAdj := teamTrace(t, "d", map[string]int{"ann": 1, "bob": -1}, &up)             // disputed, adjudicated +1
	require.Equal(t, "the guideline says so", cAdj.Adjudications[traces.AdjudicationKey("", "")].Reason)

	// The members' ratings, summed.
	require.Equal(t, map[string][]string{"a>b": {"a-ann", "a-bob", "b-ann", "b-bob"}, "c>b": {"b-ann", "b-bob", "c-ann", "c-bob", "c-cat"}},
		build(events.TrainingConfig{}, a, b, c, d))

	// Adjudicated: c is now rejected and d chosen, on the adjudications alone.
	require.Equal(t, map[string][]string{
		"a>b": {"a-ann", "a-bob", "b-ann", "b-bob"}, "a>c": {"a-ann", "a-bob", "c-adj"},
		"d>b": {"b-ann", "b-bob", "d-adj"}, "d>c": {"c-adj", "d-adj"},
	}, build(events.TrainingConfig{}, a, b, cAdj, dAdj))

	// exclude_disputed: c (disputed, not adjudicated) is left out; an
	// adjudicated dispute (d) still counts.
	e := teamTrace(t, "e", map[string]int{"ann": -1}, nil) // one member: nothing to dispute
	require.Equal(t, map[string][]string{"a>b": {"a-ann", "a-bob", "b-ann", "b-bob"}, "a>e": {"a-ann", "a-bob", "e-ann"}},
		build(events.TrainingConfig{ExcludeDisputed: true}, a, b, c, d, e))
	require.Equal(t, map[string][]string{
		"a>b": {"a-ann", "a-bob", "b-ann", "b-bob"}, "a>e": {"a-ann", "a-bob", "e-ann"},
		"d>b": {"b-ann", "b-bob", "d-adj"}, "d>e": {"d-adj", "e-ann"},
	}, build(events.TrainingConfig{ExcludeDisputed: true}, a, b, c, dAdj, e))

	// A deleted trace forgets its adjudications.
	var gone traces.State = cAdj
	require.NoError(t, gone.Apply(events.Envelope{Version: gone.Version + 1, Type: events.TraceDeleted, Payload: json.RawMessage(`{}`)}))
	require.Empty(t, gone.Adjudications)
}

// TestAdjudicatedCriterionValue: a model trained on a criterion counts an
// adjudicated value instead of the members' values of that target, by
// the criterion's weight.
func TestAdjudicatedCriterionValue(t *testing.T) {
	t.Parallel()
	c := &criteria.Criterion{ID: "crit", Name: "Correct", Kind: criteria.KindBinary, AppliesTo: criteria.AppliesToTrace}
	valued := func(id string, values map[string]string, adjudicated string) traces.State {
		s := teamTrace(t, id, nil, nil)
		s.Annotations = map[string]*traces.Annotation{}
		for member, v := range values {
			s.Annotations[id+"-"+member] = &traces.Annotation{ID: id + "-" + member, AuthorID: member, CriterionID: c.ID, Value: json.RawMessage(`"` + v + `"`)}
		}
		if adjudicated != "" {
			s.Adjudications = map[string]events.AnnotationAdjudicatedV1{traces.AdjudicationKey("", c.ID): {
				AdjudicationID: id + "-adj", TraceID: id, CriterionID: c.ID, Value: json.RawMessage(`"` + adjudicated + `"`), Reason: "r", By: "admin"}}
		}
		return s
	}
	a := valued("a", map[string]string{"ann": "yes", "bob": "yes"}, "no") // adjudicated: rejected
	b := valued("b", map[string]string{"ann": "no"}, "")                  // rejected
	d := valued("d", map[string]string{"ann": "no", "bob": "no"}, "yes")  // adjudicated: chosen
	ds, err := rewardmodels.BuildDatasetFrom(rewardmodels.DatasetInputs{ModelID: "m", Attempt: 1, Selected: []traces.State{a, b, d},
		All: []traces.State{a, b, d}, Criterion: c,
		Config: events.TrainingConfig{AnnotationSource: events.SourceExplicit, InputVersion: 1, Criterion: c.ID}})
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"d>a": {"a-adj", "d-adj"}, "d>b": {"b-ann", "d-adj"}}, pairsOf(ds))
}
