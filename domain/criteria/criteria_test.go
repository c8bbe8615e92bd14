package criteria_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
)

// fold applies decided events to a state, as the stream would.
func fold(t *testing.T, st *criteria.State, typ string, p any) {
	t.Helper()
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	require.NoError(t, st.Apply(events.Envelope{Version: st.Version + 1, Type: typ, Payload: raw}))
}

func TestDefineChangeArchive(t *testing.T) {
	t.Parallel()
	var st criteria.State
	p, err := criteria.DecideDefine(st, criteria.DefineInput{CriterionID: "c1", Name: new("  Correct "), Kind: new("binary"),
		AppliesTo: new("trace"), Labels: []criteria.LabelInput{}})
	require.NoError(t, err, "an empty labels list is no labels")
	require.Equal(t, "Correct", p.Name)
	fold(t, &st, events.CriterionDefined, p)

	_, err = criteria.DecideDefine(st, criteria.DefineInput{CriterionID: "c2", Name: new("CORRECT"), Kind: new("binary"), AppliesTo: new("trace")})
	var conflict *domain.ConflictError
	require.ErrorAs(t, err, &conflict, "names are unique among live criteria, case aside")

	a, changed, err := criteria.DecideArchive(st, "c1")
	require.NoError(t, err)
	require.True(t, changed)
	fold(t, &st, events.CriterionArchived, a)
	_, changed, err = criteria.DecideArchive(st, "c1")
	require.NoError(t, err)
	require.False(t, changed, "archiving twice appends nothing")
	_, err = criteria.DecideDefine(st, criteria.DefineInput{CriterionID: "c2", Name: new("correct"), Kind: new("binary"), AppliesTo: new("trace")})
	require.NoError(t, err, "an archived criterion's name is free")
	_, err = criteria.DecideChange(st, criteria.ChangeInput{CriterionID: "c1", Name: new("x")})
	var invalid *domain.ValidationError
	require.ErrorAs(t, err, &invalid)
	_, err = criteria.DecideChange(st, criteria.ChangeInput{CriterionID: "nope", Name: new("x")})
	var missing *domain.NotFoundError
	require.ErrorAs(t, err, &missing)
}

func TestValuesAndWeights(t *testing.T) {
	t.Parallel()
	var st criteria.State
	for _, in := range []criteria.DefineInput{
		{CriterionID: "b", Name: new("B"), Kind: new("binary"), AppliesTo: new("trace")},
		{CriterionID: "s", Name: new("S"), Kind: new("scale"), ScaleMax: new(4), AppliesTo: new("tool_call")},
		{CriterionID: "c", Name: new("C"), Kind: new("categorical"), AppliesTo: new("assistant"),
			Labels: []criteria.LabelInput{{Name: "good", Score: new(1)}, {Name: "meh"}, {Name: "bad", Score: new(-1)}}},
	} {
		p, err := criteria.DecideDefine(st, in)
		require.NoError(t, err)
		fold(t, &st, events.CriterionDefined, p)
	}
	get := func(id string) *criteria.Criterion {
		c, ok := st.Get(id)
		require.True(t, ok)
		return c
	}
	for _, tc := range []struct {
		id, in, stored string
		weight         int
	}{
		{"b", `"yes"`, `"yes"`, 1}, {"b", `"no"`, `"no"`, -1},
		{"s", `1`, `1`, -3}, {"s", `2`, `2`, -1}, {"s", `3.0`, `3`, 1}, {"s", `4`, `4`, 3},
		{"c", `"good"`, `"good"`, 1}, {"c", `"meh"`, `"meh"`, 0}, {"c", `"bad"`, `"bad"`, -1},
	} {
		v, err := get(tc.id).CheckValue(json.RawMessage(tc.in))
		require.NoError(t, err, tc.in)
		require.JSONEq(t, tc.stored, string(v))
		w, ok := get(tc.id).Weight(v)
		require.True(t, ok)
		require.Equal(t, tc.weight, w, "%s %s", tc.id, tc.in)
	}
	for _, tc := range []struct{ id, in string }{{"b", `"Yes"`}, {"b", `1`}, {"s", `0`}, {"s", `5`}, {"s", `2.5`}, {"s", `"2"`}, {"c", `"great"`}, {"c", `null`}} {
		_, err := get(tc.id).CheckValue(json.RawMessage(tc.in))
		var invalid *domain.ValidationError
		require.ErrorAs(t, err, &invalid, "%s %s", tc.id, tc.in)
		require.Equal(t, "value", invalid.Field)
	}

	// A renamed label: new values use the new name, stored ones keep
	// their weight, and the old name cannot name another label.
	ch, err := criteria.DecideChange(st, criteria.ChangeInput{CriterionID: "c", LabelsSet: true,
		Labels: []criteria.LabelInput{{Name: "polite", Score: new(1)}, {Name: "meh"}, {Name: "rude", Score: new(-1)}}})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"good": "polite", "bad": "rude"}, criteria.Renames(get("c").Labels, ch.Labels))
	fold(t, &st, events.CriterionChanged, ch)
	w, ok := get("c").Weight(json.RawMessage(`"bad"`))
	require.True(t, ok)
	require.Equal(t, -1, w)
	_, err = get("c").CheckValue(json.RawMessage(`"bad"`))
	require.Error(t, err)
	_, err = criteria.DecideChange(st, criteria.ChangeInput{CriterionID: "c", LabelsSet: true,
		Labels: []criteria.LabelInput{{Name: "polite", Score: new(1)}, {Name: "meh"}, {Name: "rude", Score: new(-1)}, {Name: "good"}}})
	var invalid *domain.ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "labels[3].name", invalid.Field)
	require.Equal(t, "yes", *criteria.ValueText(json.RawMessage(`"yes"`)))
	require.Equal(t, "4", *criteria.ValueText(json.RawMessage(`4`)))
	require.Nil(t, criteria.ValueText(nil))
}
