package comparisons

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
)

func target(trace, step, ctx, action string) feedback.Target {
	return feedback.Target{TraceID: trace, StepID: step, Context: ctx, Action: action}
}

func TestModelPairs(t *testing.T) {
	t.Parallel()
	ts := []feedback.Target{
		target("t1", "a", "user: sort 3 1 2", "assistant: 1 2 3"),
		target("t2", "a", "user: sort 3 1 2", "assistant: 3 2 1"),
		target("t3", "a", "user: sort 3 1 2", "assistant: 1 2 3"), // the same action again: one candidate
		target("t4", "a", "user: sort b a", "assistant: a b"),
		target("t5", "a", "user: sort b a", "assistant: b a"),
		target("t6", "a", "user: alone", "assistant: only one action"),
	}
	sc := func(m, tr string, v float64) ModelScore {
		return ModelScore{ModelID: m, TraceID: tr, StepID: "a", Score: v}
	}
	scores := []ModelScore{
		// sort 3 1 2: m1 prefers 1 2 3 (mean of t1, t3), m2 prefers 3 2 1, m3 agrees with m1.
		sc("m1", "t1", 2), sc("m1", "t3", 1), sc("m1", "t2", 0),
		sc("m2", "t1", -1), sc("m2", "t3", -1), sc("m2", "t2", 0.5),
		sc("m3", "t1", 9), sc("m3", "t2", 1),
		// sort b a: m1 and m2 agree; m3 has a tie at the top (prefers neither).
		sc("m1", "t4", 1), sc("m1", "t5", 0), sc("m2", "t4", 3), sc("m2", "t5", 2), sc("m3", "t4", 1), sc("m3", "t5", 1),
		sc("m1", "t6", 1), sc("m2", "t6", -1),
	}
	got := ModelPairs(ts, scores)
	require.Len(t, got, 2)
	cid := ContextID("user: sort 3 1 2")
	require.Equal(t, "m1", got[0].ModelA)
	require.Equal(t, "m2", got[0].ModelB)
	require.Equal(t, ModelsKey("m2", cid), got[0].Key)
	require.Equal(t, "t1", got[0].A.TraceID, "1 2 3 is represented by its first trace")
	require.Equal(t, "t2", got[0].B.TraceID)
	require.InDelta(t, 1.5, got[0].ScoreA, 1e-12)
	require.Equal(t, 2, got[0].CandidateActions)
	require.Equal(t, "m2", got[1].ModelA)
	require.Equal(t, "m3", got[1].ModelB)

	b, c, ok := ParseModelsKey(got[0].Key)
	require.True(t, ok)
	require.Equal(t, []string{"m2", cid}, []string{b, c})
	_, _, ok = ParseModelsKey("a-finding-id")
	require.False(t, ok)

	// The presentation is seeded per reviewer and recorded: the verdict
	// names the kind it saw on the left.
	left, right := ModelSides("rev", got[0])
	require.ElementsMatch(t, []string{events.SideModelA, events.SideModelB}, []string{left.Kind, right.Kind})
	again, _ := ModelSides("rev", got[0])
	require.Equal(t, left, again)
	pref, err := Decide(left, right, Verdict{Left: left.Kind, Choice: events.ChoiceRight})
	require.NoError(t, err)
	require.Equal(t, right.Kind, pref)
	_, err = Decide(left, right, Verdict{Left: right.Kind, Choice: events.ChoiceLeft})
	require.ErrorContains(t, err, "shows the "+left.Kind+" action on the left")
	_, err = Decide(left, right, Verdict{Left: events.SideOriginal, Choice: events.ChoiceLeft})
	require.ErrorContains(t, err, "left must be model_a or model_b")
}
