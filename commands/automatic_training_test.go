package commands_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// labelAll records, as the step labeler would, a label for every chunk of
// a trace: a request, a successful lookup (when there is one), an answer,
// and the user's verdict on that answer.
func labelAll(t *testing.T, cmds *commands.Commands, traceID, verdict, sentiment string) {
	t.Helper()
	ctx := context.Background()
	src, err := cmds.Streams.LabelSourceOf(ctx, traceID, 1)
	require.NoError(t, err)
	require.True(t, src.Needed)
	chunks := labels.Chunks(src.Steps)
	var out []labels.Label
	answer := ""
	for _, c := range chunks {
		switch {
		case c.Kind == labels.KindToolCall:
			out = append(out, labels.Label{ChunkID: c.ID, TaskID: "t1", Actor: labels.ActorAgent, Type: labels.TypeToolCall, Effect: labels.EffectLookup,
				Result: labels.ResultOK, IsOutput: new(false), Outcome: labels.OutcomeNone, Stance: labels.StanceNone, Coverage: labels.CoverageNone})
		case c.Kind == labels.KindAgentMessage:
			answer = c.ID
			out = append(out, labels.Label{ChunkID: c.ID, TaskID: "t1", Actor: labels.ActorAgent, Type: labels.TypeAnswer, Effect: labels.EffectNone,
				Result: labels.ResultNone, IsOutput: new(true), Outcome: labels.OutcomeSolved, Stance: labels.StanceConfident, Coverage: labels.CoverageFull})
		case answer == "":
			out = append(out, labels.Label{ChunkID: c.ID, TaskID: "t1", Actor: labels.ActorUser, Intent: labels.IntentRequest, Verdict: labels.VerdictNone,
				Sentiment: labels.SentimentNeutral})
		default:
			out = append(out, labels.Label{ChunkID: c.ID, TaskID: "t1", Actor: labels.ActorUser, Intent: labels.IntentFeedback, Verdict: verdict,
				VerdictTarget: new(answer), Sentiment: sentiment})
		}
	}
	_, err = cmds.RecordStepLabels.Handle(ctx, commands.RecordStepLabels{Actor: commands.WorkerActor("labeler"), Labels: traces.StepLabelsInput{TraceID: traceID, Revision: 1, Model: "openai/labeler",
		PromptVersion: labels.PromptVersion, Labels: out}})
	require.NoError(t, err)
}

// TestTrainingFromAutomaticAnnotation: two traces with no annotation at all,
// labeled by the step labeler, train with annotation_source "automatic":
// the dataset's comparisons come from the automatic credit, each records
// chosen_credit > 0 > rejected_credit and its credit method; a selection
// without labels fails naming the labeler.
func TestTrainingFromAutomaticAnnotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cmds, store, actor := setupWith(t)
	imp, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"good","steps":[{"role":"user","content":"find invoice 7"},{"role":"assistant","content":"","tool_name":"search","tool_input":{"q":"7"},"tool_call_id":"c1"},{"role":"tool","content":"paid","tool_name":"search","tool_call_id":"c1"},{"role":"assistant","content":"Invoice 7 is paid."},{"role":"user","content":"great, thanks"}]}` + "\n" +
			`{"id":"bad","steps":[{"role":"user","content":"find invoice 8"},{"role":"assistant","content":"Invoice 8 does not exist."},{"role":"user","content":"wrong, it does"}]}`)}})
	require.NoError(t, err)
	auto := "automatic"

	// Unlabeled: too few pairs, and the error says what to do.
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "auto0", TraceIDs: imp.TraceIDs, Config: &commands.TrainingConfig{AnnotationSource: &auto}}})
	require.NoError(t, err)
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	m, err := cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.Contains(t, m.Error, "CRITIC_STEP_LABEL_MODEL")

	labelAll(t, cmds, imp.TraceIDs[0], labels.VerdictConfirmed, labels.SentimentPositive)
	labelAll(t, cmds, imp.TraceIDs[1], labels.VerdictRejectedConfident, labels.SentimentNegative)
	req, err = cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "auto", TraceIDs: imp.TraceIDs, Config: &commands.TrainingConfig{AnnotationSource: &auto}}})
	require.NoError(t, err)
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	m, err = cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.NotNil(t, m.Dataset, m.Error)
	raw, err := store.Blobs().Get(ctx, m.Dataset.DatasetKey)
	require.NoError(t, err)
	var ds rewardmodels.Dataset
	require.NoError(t, json.Unmarshal(raw, &ds))
	require.GreaterOrEqual(t, len(ds.Pairs), 2)
	kinds := map[string]bool{}
	for _, p := range ds.Pairs {
		require.Equal(t, rewardmodels.SourceAutomatic, p.Source)
		require.Equal(t, "step_scores_v1", p.CreditMethod)
		require.NotNil(t, p.ChosenCredit)
		require.NotNil(t, p.RejectedCredit)
		require.Greater(t, *p.ChosenCredit, 0.0)
		require.Less(t, *p.RejectedCredit, 0.0)
		require.Empty(t, p.AnnotationIDs, "no manual annotation")
		kinds[p.Granularity] = true
	}
	require.True(t, kinds["trace"], "the confirmed trace is chosen over the rejected one")
	require.True(t, kinds["step"], "the confirmed answer is chosen over the rejected one")
	require.Equal(t, 2, ds.SourceTraces)
}
