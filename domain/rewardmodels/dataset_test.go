package rewardmodels_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

func state(id string, rating *int) traces.State {
	s := traces.State{ID: id, Exists: true, Revision: 1, Steps: []events.StepRecord{
		{ID: id + "-u", Index: 0, Step: domain.Step{Role: domain.RoleUser, Content: "q " + id}},
		{ID: id + "-a", Index: 1, Step: domain.Step{Role: domain.RoleAssistant, Content: "answer " + id}},
	}, Annotations: map[string]*traces.Annotation{}}
	if rating != nil {
		s.Annotations[id+"-r"] = &traces.Annotation{ID: id + "-r", Rating: rating}
		s.Annotations[id+"-s"] = &traces.Annotation{ID: id + "-s", StepID: id + "-a", Rating: rating}
	}
	return s
}

// judged is an accepted AI judgment (negative) on a trace's answer.
func judged(t *testing.T, s traces.State) events.RewardModelFeedbackExtractedV1 {
	tg := feedback.Targets(rewardmodels.FeedbackTrace(s))[0]
	alt := "better " + s.ID
	f, review := feedback.FromJudgment(tg, feedback.JudgmentAnswer{Label: "negative", Confidence: "high", Alternative: &alt, Reason: "r"},
		[]string{"a: x", "b: y"}, "m", "h")
	require.True(t, review)
	want := "A"
	if feedback.OriginalFirst(tg.TraceID, tg.StepID) {
		want = "B"
	}
	feedback.ApplyReview(&f, tg, feedback.ReviewAnswer{Preferred: want, Grounded: true})
	require.Equal(t, events.OutcomePair, f.Outcome)
	return events.RewardModelFeedbackExtractedV1{TraceID: s.ID, TraceRevision: 1, Findings: []events.Finding{f}}
}

func TestRatingsComeFirstAndFindingsFillUpToMaxPairs(t *testing.T) {
	t.Parallel()
	up, down := 1, -1
	a, b, c, d := state("a", &up), state("b", &down), state("c", nil), state("d", nil)
	selected := []traces.State{a, b, c, d}
	recs := []events.RewardModelFeedbackExtractedV1{judged(t, a), judged(t, c), judged(t, d)}
	in := rewardmodels.DatasetInputs{ModelID: "m", Attempt: 1, Selected: selected, All: selected, MaxPairs: 3,
		Config: events.TrainingConfig{AnnotationSource: events.SourceFeedback, InputVersion: 1}, Extracted: recs}
	ds, err := rewardmodels.BuildDatasetFrom(in)
	require.NoError(t, err)
	require.Len(t, ds.Pairs, 3)
	require.Empty(t, ds.Pairs[0].Source, "rating pairs first")
	require.Empty(t, ds.Pairs[1].Source)
	require.Equal(t, events.FindingAIJudgment, ds.Pairs[2].Source)
	require.Equal(t, []string{"c"}, ds.Pairs[2].TraceIDs, "a's judgment is dropped: its step is rated; d's is cut by max_pairs")
	require.Equal(t, "q c\nassistant: better c", ds.Pairs[2].Chosen[len("user: "):])

	// explicit ignores findings.
	in.Config.AnnotationSource, in.MaxPairs = events.SourceExplicit, 10
	ds, err = rewardmodels.BuildDatasetFrom(in)
	require.NoError(t, err)
	require.Len(t, ds.Pairs, 2)
}

// TestHarnessStepsAreNeverWhatTheUserSaid: a step an agent's harness wrote
// as a user message (metadata.harness: hook feedback, /exit) is not
// evidence; the user's own message after it still is.
func TestHarnessStepsAreNeverWhatTheUserSaid(t *testing.T) {
	t.Parallel()
	harness := map[string]any{"harness": true, "harness_kind": "hook_feedback"}
	s := traces.State{ID: "h", Exists: true, Revision: 1, Steps: []events.StepRecord{
		{ID: "h-u", Index: 0, Step: domain.Step{Role: domain.RoleUser, Content: "fix the cart total"}},
		{ID: "h-a", Index: 1, Step: domain.Step{Role: domain.RoleAssistant, Content: "Fixed."}},
		{ID: "h-hook", Index: 2, Step: domain.Step{Role: domain.RoleUser, Content: "Stop hook feedback: lint found 2 warnings", Metadata: harness}},
		{ID: "h-exit", Index: 3, Step: domain.Step{Role: domain.RoleUser, Content: "<command-name>/exit</command-name>", Metadata: map[string]any{"harness": true, "harness_kind": "command"}}},
		{ID: "h-me", Index: 4, Step: domain.Step{Role: domain.RoleUser, Content: "the total is still wrong"}},
	}, Annotations: map[string]*traces.Annotation{}}
	ts := feedback.Targets(rewardmodels.FeedbackTrace(s))
	require.Len(t, ts, 1)
	require.Equal(t, []feedback.Evidence{{ID: "step:h-me", Kind: feedback.EvidenceUserMessage, Text: "the total is still wrong"}}, ts[0].Evidence)
}
