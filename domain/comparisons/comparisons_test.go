package comparisons_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/domain/events"
)

// The presentation is stable per reviewer and finding and balanced over
// findings, so position bias cannot favour either side.
func TestSidesAreSeededAndBalanced(t *testing.T) {
	t.Parallel()
	left := 0
	for i := range 1000 {
		f := fmt.Sprintf("finding-%d", i)
		l, r := comparisons.Sides("rev", f, "orig", "alt")
		l2, _ := comparisons.Sides("rev", f, "orig", "alt")
		require.Equal(t, l, l2)
		require.NotEqual(t, l.Kind, r.Kind)
		if l.Kind == events.SideOriginal {
			left++
			require.Equal(t, "orig", l.Action)
		}
	}
	require.InDelta(t, 500, left, 60)
}

func TestDecide(t *testing.T) {
	t.Parallel()
	l := events.ComparisonSide{Kind: events.SideAlternative, Action: "a"}
	r := events.ComparisonSide{Kind: events.SideOriginal, Action: "o"}
	for _, tc := range []struct {
		v     comparisons.Verdict
		want  string
		field string
	}{
		{comparisons.Verdict{Left: "alternative", Choice: "left"}, "alternative", ""},
		{comparisons.Verdict{Left: "alternative", Choice: "right"}, "original", ""},
		{comparisons.Verdict{Left: "alternative", Choice: "tie"}, "tie", ""},
		{comparisons.Verdict{Left: "original", Choice: "left"}, "", "left"},
		{comparisons.Verdict{Left: "mine", Choice: "left"}, "", "left"},
		{comparisons.Verdict{Left: "alternative", Choice: "both"}, "", "choice"},
	} {
		got, err := comparisons.Decide(l, r, tc.v)
		if tc.field == "" {
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			continue
		}
		var ve *domain.ValidationError
		require.True(t, errors.As(err, &ve), "%v", tc.v)
		require.Equal(t, tc.field, ve.Field)
	}
}

func TestPairAndReviewable(t *testing.T) {
	t.Parallel()
	c := events.ComparisonReviewedV1{Context: "user: q", Left: events.ComparisonSide{Action: "assistant: x"}, Right: events.ComparisonSide{Action: "assistant: y"}, Choice: "right"}
	ch, rj, ok := comparisons.Pair(c)
	require.True(t, ok)
	require.Equal(t, "user: q\nassistant: y", ch)
	require.Equal(t, "user: q\nassistant: x", rj)
	c.Choice = "tie"
	_, _, ok = comparisons.Pair(c)
	require.False(t, ok)

	alt := "assistant: better"
	same := "assistant: same"
	require.True(t, comparisons.Reviewable(events.Finding{OriginalAction: "assistant: x", AlternativeAction: &alt, Outcome: events.OutcomeReviewRejected}))
	require.False(t, comparisons.Reviewable(events.Finding{OriginalAction: "assistant: x"}))
	require.False(t, comparisons.Reviewable(events.Finding{OriginalAction: same, AlternativeAction: &same, Outcome: events.OutcomePair}))
	require.False(t, comparisons.Reviewable(events.Finding{OriginalAction: "assistant: x", AlternativeAction: &alt, Outcome: events.OutcomeInvalidEvidence}))
}
