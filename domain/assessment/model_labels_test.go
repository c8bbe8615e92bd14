package assessment

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/labels"
)

// modelLabeled is labeled(t)'s conversation without its imported labels,
// and the labels a labeling model recorded for its chunks instead.
func modelLabeled(t *testing.T) ([]domain.Step, []string, []labels.Chunk, map[string]labels.Label) {
	steps, ids := labeled(t)
	for i := range steps {
		steps[i].Metadata = nil
	}
	cs := labels.Chunks(steps)
	require.Len(t, cs, 4)
	yes := true
	no := false
	stored := map[string]labels.Label{
		cs[0].ID: {ChunkID: cs[0].ID, TaskID: "t1", Actor: labels.ActorUser, Intent: labels.IntentRequest, Verdict: labels.VerdictNone, Sentiment: labels.SentimentNeutral},
		cs[1].ID: {ChunkID: cs[1].ID, TaskID: "t1", Actor: labels.ActorAgent, Type: labels.TypeToolCall, Effect: labels.EffectLookup, Result: labels.ResultOK,
			IsOutput: &no, Outcome: labels.OutcomeNone, Stance: labels.StanceNone, Coverage: labels.CoverageNone},
		cs[2].ID: {ChunkID: cs[2].ID, TaskID: "t1", Actor: labels.ActorAgent, Type: labels.TypeAnswer, Effect: labels.EffectNone, Result: labels.ResultNone,
			IsOutput: &yes, Outcome: labels.OutcomeSolved, Stance: labels.StanceConfident, Coverage: labels.CoverageFull},
		cs[3].ID: {ChunkID: cs[3].ID, TaskID: "t1", Actor: labels.ActorUser, Intent: labels.IntentFeedback, Verdict: labels.VerdictConfirmed,
			VerdictTarget: &cs[2].ID, Sentiment: labels.SentimentPositive},
	}
	return steps, ids, cs, stored
}

// A model's labels are placed on the first step of their chunks, where an
// imported label would be; an imported label wins over the model's.
func TestModelLabelsArePlacedLikeImportedOnes(t *testing.T) {
	t.Parallel()
	steps, ids, cs, stored := modelLabeled(t)
	a := Of(steps, ids, nil, stored, nil)
	placed := a.ModelLabels()
	require.Len(t, placed, len(steps))
	for i, want := range map[int]string{1: cs[0].ID, 2: cs[1].ID, 4: cs[2].ID, 5: cs[3].ID} {
		require.NotNil(t, placed[i], "step %d", i)
		require.Equal(t, want, placed[i].ChunkID)
	}
	require.Nil(t, placed[0], "the system step is no chunk")
	require.Nil(t, placed[3], "the tool result shares its call's chunk and label")

	imported, ids := labeled(t)
	userChunk := labels.Chunks(imported)[0].ID
	other := map[string]labels.Label{userChunk: {ChunkID: userChunk, TaskID: "t1", Actor: labels.ActorUser, Intent: labels.IntentFollowUp,
		Verdict: labels.VerdictNone, Sentiment: labels.SentimentNeutral}}
	a = Of(imported, ids, nil, other, nil)
	require.Equal(t, make([]*labels.Label, len(imported)), a.ModelLabels(), "imported labels are shown as imported")
	require.Equal(t, labels.IntentRequest, a.Labels.Labels[0].Intent, "the import wins")
}

// While a rescore's new labels are awaited the trace reads queued, with the
// chunks still to relabel counted; imported labels are never relabeled.
func TestRelabelingShowsQueued(t *testing.T) {
	t.Parallel()
	steps, ids, cs, stored := modelLabeled(t)
	a := Of(steps, ids, nil, stored, nil)
	require.Equal(t, LabelingLabeled, a.Labeling.State)
	st := WithRun(Relabeling(a.Labeling, a.Labels, map[string]bool{cs[0].ID: true, cs[2].ID: true}), "openai/labeler", nil)
	require.Equal(t, LabelingQueued, st.State)
	require.Equal(t, 2, st.ToLabel)
	require.Equal(t, 4, st.Labeled, "the stale labels still score the trace")
	require.Equal(t, LabelingLabeled, WithRun(Relabeling(a.Labeling, a.Labels, nil), "openai/labeler", nil).State)

	imported, ids := labeled(t)
	b := Of(imported, ids, nil, nil, nil)
	all := map[string]bool{}
	for _, c := range labels.Chunks(imported) {
		all[c.ID] = true
	}
	require.Equal(t, b.Labeling, Relabeling(b.Labeling, b.Labels, all))
}
