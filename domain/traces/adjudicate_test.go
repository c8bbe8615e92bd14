package traces

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/criteria"
)

// TestDecideAdjudicate: a final judgment is a rating of ±1 on the trace or
// a step of it, with a reason; anything else is refused naming the field,
// and nothing is recorded.
func TestDecideAdjudicate(t *testing.T) {
	st := stored(t, "q", "a") // s0 user, s1 assistant
	up, zero := 1, 0
	p, err := DecideAdjudicate(st, AdjudicateInput{AdjudicationID: "x", StepID: "s1", Rating: &up, Reason: " per the guideline ", By: "admin"})
	require.NoError(t, err)
	require.Equal(t, "per the guideline", p.Reason)
	require.Equal(t, 1, p.Rating)
	require.Equal(t, "s1", p.StepID)
	require.Equal(t, st.Revision, p.TraceRevision)

	for _, tc := range []struct {
		in    AdjudicateInput
		field string
	}{
		{AdjudicateInput{Rating: &up}, "reason"},
		{AdjudicateInput{Rating: &up, Reason: "  "}, "reason"},
		{AdjudicateInput{Reason: "r"}, "rating"},
		{AdjudicateInput{Rating: &zero, Reason: "r"}, "rating"},
		{AdjudicateInput{Rating: &up, Reason: "r", StepID: "nope"}, "step_id"},
		{AdjudicateInput{Rating: &up, Reason: "r", CriterionID: "c1"}, "rating"},
		{AdjudicateInput{Reason: "r", CriterionID: "c1", Value: []byte(`"yes"`)}, "criterion_id"},
	} {
		_, err := DecideAdjudicate(st, tc.in)
		var ve *domain.ValidationError
		require.True(t, errors.As(err, &ve), "%+v: %v", tc.in, err)
		require.Equal(t, tc.field, ve.Field, ve.Message)
	}
	_, err = DecideAdjudicate(State{ID: "gone"}, AdjudicateInput{Rating: &up, Reason: "r"})
	var nf *domain.NotFoundError
	require.True(t, errors.As(err, &nf), "%v", err)
}

// TestDecideAdjudicateValue: a criterion's final value is checked as a
// member's value is: a known value of a live criterion on its kind of target.
func TestDecideAdjudicateValue(t *testing.T) {
	st := stored(t, "q", "a")
	c := &criteria.Criterion{ID: "c1", Name: "Correct", Kind: criteria.KindBinary, AppliesTo: criteria.AppliesToTrace}
	p, err := DecideAdjudicate(st, AdjudicateInput{CriterionID: "c1", Criterion: c, Value: []byte(`"yes"`), Reason: "r"})
	require.NoError(t, err)
	require.Equal(t, "c1", p.CriterionID)
	require.JSONEq(t, `"yes"`, string(p.Value))
	require.Zero(t, p.Rating)
	var ve *domain.ValidationError
	_, err = DecideAdjudicate(st, AdjudicateInput{CriterionID: "c1", Criterion: c, Value: []byte(`"maybe"`), Reason: "r"})
	require.True(t, errors.As(err, &ve), "%v", err)
	require.Equal(t, "value", ve.Field)
	_, err = DecideAdjudicate(st, AdjudicateInput{CriterionID: "c1", Criterion: c, StepID: "s1", Value: []byte(`"yes"`), Reason: "r"})
	require.True(t, errors.As(err, &ve), "%v", err)
	require.Equal(t, "step_id", ve.Field)
	c.Archived = true
	_, err = DecideAdjudicate(st, AdjudicateInput{CriterionID: "c1", Criterion: c, Value: []byte(`"yes"`), Reason: "r"})
	require.True(t, errors.As(err, &ve), "%v", err)
	require.Equal(t, "criterion_id", ve.Field)
}
