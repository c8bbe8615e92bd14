package traces

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// TestThinkingTakesCommentsNotRatings: a rating on a thinking step
// (metadata.thinking) is refused naming the step; a comment on it is
// accepted; an old rating recorded there before the rule keeps its
// comment editable but cannot be changed to another rating.
func TestThinkingTakesCommentsNotRatings(t *testing.T) {
	st := State{ID: "t1", Exists: true, Revision: 1, Steps: []events.StepRecord{
		{ID: "u", Index: 0, Step: domain.Step{Role: domain.RoleUser, Content: "fix it"}},
		{ID: "th", Index: 1, Step: domain.Step{Role: domain.RoleAssistant, Content: "let me think", Metadata: map[string]any{"thinking": true}}},
		{ID: "r", Index: 2, Step: domain.Step{Role: domain.RoleAssistant, Content: "done"}},
	}, Annotations: map[string]*Annotation{}}
	up, down := 1, -1
	_, err := DecideAddAnnotation(st, AddAnnotationInput{AnnotationID: "a1", StepID: "th", Rating: &up, AuthorID: "ann"})
	var v *domain.ValidationError
	require.ErrorAs(t, err, &v)
	require.Equal(t, "rating", v.Field)
	require.Contains(t, v.Message, "step 2 (th) is thinking")

	c := "reasoning skipped the tests"
	p, err := DecideAddAnnotation(st, AddAnnotationInput{AnnotationID: "a2", StepID: "th", Comment: &c, AuthorID: "ann"})
	require.NoError(t, err, "comments on thinking stay allowed")
	require.Equal(t, "th", p.StepID)

	_, err = DecideAddAnnotation(st, AddAnnotationInput{AnnotationID: "a3", StepID: "r", Rating: &up, AuthorID: "ann"})
	require.NoError(t, err, "the reply after it is rateable")

	// Adding a rating to the comment by PATCH is refused too.
	st.Annotations["a2"] = &Annotation{ID: "a2", StepID: "th", Comment: &c, AuthorID: "ann"}
	_, err = DecideEditAnnotation(st, EditAnnotationInput{AnnotationID: "a2", Rating: Optional[int]{Set: true, Value: &up}})
	require.ErrorAs(t, err, &v)
	require.Equal(t, "rating", v.Field)

	// A rating recorded before the rule: its comment can be edited, its
	// rating not flipped.
	st.Annotations["old"] = &Annotation{ID: "old", StepID: "th", Rating: &up, AuthorID: "ann"}
	_, err = DecideEditAnnotation(st, EditAnnotationInput{AnnotationID: "old", Comment: Optional[string]{Set: true, Value: &c}})
	require.NoError(t, err)
	_, err = DecideEditAnnotation(st, EditAnnotationInput{AnnotationID: "old", Rating: Optional[int]{Set: true, Value: &down}})
	require.ErrorAs(t, err, &v)
}
