package rewardmodels_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// thinkingTrace is a trace whose thinking step carries a rating (recorded
// before the API refused them) besides its reply's rating.
func thinkingTrace(id string, rating int) traces.State {
	r := rating
	return traces.State{ID: id, Exists: true, Revision: 1, Steps: []events.StepRecord{
		{ID: id + "-u", Index: 0, Step: domain.Step{Role: domain.RoleUser, Content: "q " + id}},
		{ID: id + "-t", Index: 1, Step: domain.Step{Role: domain.RoleAssistant, Content: "thinking " + id, Metadata: map[string]any{"thinking": true}}},
		{ID: id + "-a", Index: 2, Step: domain.Step{Role: domain.RoleAssistant, Content: "answer " + id}},
	}, Annotations: map[string]*traces.Annotation{
		id + "-rt": {ID: id + "-rt", StepID: id + "-t", Rating: &r},
		id + "-ra": {ID: id + "-ra", StepID: id + "-a", Rating: &r},
		id + "-r":  {ID: id + "-r", Rating: &r},
	}}
}

// TestThinkingIsNeitherTargetNorScoredAction: under the current rule a
// thinking step's rating makes no pair and the step gets no action score;
// a model requested before the rule (no thinking_excluded in its
// training_config) rebuilds the dataset it was built with, thinking
// included.
func TestThinkingIsNeitherTargetNorScoredAction(t *testing.T) {
	t.Parallel()
	sel := []traces.State{thinkingTrace("a", 1), thinkingTrace("b", -1)}
	build := func(cfg events.TrainingConfig) rewardmodels.Dataset {
		ds, err := rewardmodels.BuildDatasetFrom(rewardmodels.DatasetInputs{ModelID: "m", Attempt: 1, Selected: sel, All: sel, Config: cfg})
		require.NoError(t, err)
		return ds
	}
	scored := func(ds rewardmodels.Dataset) []string {
		var ids []string
		for _, it := range ds.ActionScoreItems {
			ids = append(ids, it.StepID)
		}
		return ids
	}
	annotations := func(ds rewardmodels.Dataset) [][]string {
		var out [][]string
		for _, p := range ds.Pairs {
			out = append(out, p.AnnotationIDs)
		}
		return out
	}

	now := build(events.TrainingConfig{AnnotationSource: events.SourceExplicit, InputVersion: 1, ThinkingExcluded: true})
	require.Equal(t, []string{"a-a", "b-a"}, scored(now), "thinking steps are not scored actions")
	require.ElementsMatch(t, [][]string{{"a-r", "b-r"}, {"a-ra", "b-ra"}}, annotations(now), "only the traces' and the replies' ratings make pairs")

	before := build(events.TrainingConfig{AnnotationSource: events.SourceExplicit, InputVersion: 1})
	require.Equal(t, []string{"a-t", "a-a", "b-t", "b-a"}, scored(before), "a dataset built before the rule rebuilds with thinking scored")
	require.Len(t, before.Pairs, 5, "and its thinking ratings paired, as stored")

	old := rewardmodels.ConfigOf(events.RewardModelRequestedV1{})
	require.False(t, old.ThinkingExcluded, "a request from before training_config existed keeps the old rule")
	require.False(t, rewardmodels.IsScorableAction(rewardmodels.PairTrace(sel[0]).Steps[1]), "scoring runs skip thinking")
}
