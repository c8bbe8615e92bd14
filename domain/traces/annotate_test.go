package traces

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
)

// TestOneRatingPerReviewerPerTarget: rating a target again leaves the
// reviewer one live rating there, keeps their earlier comment, and leaves
// other reviewers, other targets and comment-only annotations alone.
func TestOneRatingPerReviewerPerTarget(t *testing.T) {
	st := stored(t, "a", "b")
	version := int64(1)
	apply := func(typ string, p any) {
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		version++
		require.NoError(t, st.Apply(events.Envelope{Type: typ, Version: version, OwnerID: "o", Payload: raw}))
	}
	add := func(id, author, step string, rating *int, comment string) {
		in := AddAnnotationInput{AnnotationID: id, StepID: step, Rating: rating, AuthorID: author}
		if comment != "" {
			in.Comment = &comment
		}
		p, err := DecideAddAnnotation(st, in)
		require.NoError(t, err)
		if rating != nil {
			prior := SupersedeRatings(st, author, step, id)
			for _, e := range prior.Edits {
				apply(events.AnnotationEdited, e)
			}
			for _, r := range prior.Removals {
				apply(events.AnnotationRemoved, r)
			}
		}
		apply(events.AnnotationAdded, p)
	}
	up, down := 1, -1
	add("a1", "ann", "s1", &up, "lacks a source - guessed?")
	add("a2", "ann", "s1", nil, "a second thought")
	add("b1", "bob", "s1", &up, "")
	add("a3", "ann", "s0", &up, "")
	add("a4", "ann", "", &up, "")
	add("a5", "ann", "s1", &down, "")

	live := map[string]int{}
	for id, a := range st.Annotations {
		if a.Rating != nil {
			live[id] = *a.Rating
		}
	}
	require.Equal(t, map[string]int{"a5": -1, "b1": 1, "a3": 1, "a4": 1}, live, "ann has one vote on s1: the new -1")
	require.NotNil(t, st.Annotations["a1"], "the earlier rating's comment is kept")
	require.Equal(t, "lacks a source - guessed?", *st.Annotations["a1"].Comment)
	require.Nil(t, st.Annotations["a1"].Rating)
	require.NotNil(t, st.Annotations["a2"], "comment-only annotations are untouched")

	// A rating without a comment is removed, not left empty.
	add("a6", "ann", "s0", &down, "")
	require.Nil(t, st.Annotations["a3"])
	prior := SupersedeRatings(st, "", "s0", "x")
	require.Empty(t, prior.Edits)
	require.Empty(t, prior.Removals, "annotations without an author are not matched to each other")
}
