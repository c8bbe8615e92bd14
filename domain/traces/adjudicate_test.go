package traces

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
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
