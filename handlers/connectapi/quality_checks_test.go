package connectapi_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/stepscores"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/gpuworker/grade/gradetest"
	"github.com/criticml/critic/projections/readmodel"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

func rewardOf(t *testing.T, d *readmodel.TraceDetail, i int) map[string]any {
	t.Helper()
	var md map[string]any
	require.NoError(t, json.Unmarshal(d.Steps[i].Metadata, &md))
	r, _ := md["reward"].(map[string]any)
	return r
}

// TestQualityChecksBlendIntoTheTraceDetail: without a grading model's
// answers the trace detail is the rules alone; once checks are recorded
// (trace.steps_quality_checked) steps[].metadata.reward shows each check
// and its blended points, step_scores and the /query snapshot follow, and
// a user's later reaction to the answer takes over from its check.
func TestQualityChecksBlendIntoTheTraceDetail(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := e.client()
	imp, err := c.ImportTraces(ctx, withKey(e.alice, &criticv1.ImportTracesRequest{Format: "stash", Data: plainRefund}))
	require.NoError(t, err)
	id := imp.Msg.TraceIds[0]
	d, err := e.srv.Queries.GetTrace(ctx, e.aliceID, id)
	require.NoError(t, err)
	cs := labels.Chunks(domainSteps(t, d))
	f, tr := false, true
	worker := commands.WorkerActor("labeler-1")
	res, err := e.srv.Cmds.RecordStepLabels.Handle(ctx, commands.RecordStepLabels{Actor: worker, Labels: traces.StepLabelsInput{TraceID: id, Revision: 1, Model: "openai/test-labeler", Labels: []labels.Label{
		{ChunkID: cs[0].ID, TaskID: "t", Actor: labels.ActorUser, Intent: labels.IntentRequest, Verdict: labels.VerdictNone, Sentiment: labels.SentimentNeutral},
		{ChunkID: cs[1].ID, TaskID: "t", Actor: labels.ActorAgent, Type: labels.TypeToolCall, Effect: labels.EffectLookup, Result: labels.ResultOK,
			IsOutput: &f, Outcome: labels.OutcomeNone, Stance: labels.StanceNone, Coverage: labels.CoverageNone},
		{ChunkID: cs[2].ID, TaskID: "t", Actor: labels.ActorAgent, Type: labels.TypeAnswer, Effect: labels.EffectNone, Result: labels.ResultNone,
			IsOutput: &tr, Outcome: labels.OutcomeSolved, Stance: labels.StanceConfident, Coverage: labels.CoverageFull},
	}}})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, res.LastEventID))
	d, err = e.srv.Queries.GetTrace(ctx, e.aliceID, id)
	require.NoError(t, err)
	require.Equal(t, stepscores.Policy, d.StepScores.Policy, "no checks: the rules alone")
	require.InDelta(t, 0.22, *d.StepScores.TraceScore, 1e-9)
	require.NotContains(t, rewardOf(t, d, 1), "quality_check")

	res, err = e.srv.Cmds.RecordQualityChecks.Handle(ctx, commands.RecordQualityChecks{Actor: commands.WorkerActor("grader-1"), Checks: traces.QualityChecksInput{TraceID: id, Revision: 1,
		Model: "openai/test-grader", PromptVersion: "p1", Checks: []stepscores.Check{
			{ChunkID: cs[1].ID, Question: stepscores.QuestionWork, Probabilities: gradetest.Answers[stepscores.QuestionWork]},
			{ChunkID: cs[2].ID, Question: stepscores.QuestionAnswer, Probabilities: gradetest.Answers[stepscores.QuestionAnswer]},
		}}})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, res.LastEventID))
	d, err = e.srv.Queries.GetTrace(ctx, e.aliceID, id)
	require.NoError(t, err)
	require.Equal(t, stepscores.Policy+"+"+stepscores.CheckPolicy, d.StepScores.Policy)
	require.InDelta(t, 0.225, *d.StepScores.TraceScore, 1e-9, "−0.03 −0.02 for the work, 0.275 for the answer")
	require.Equal(t, "partial_success", d.StepScores.Outcome, "nobody reacted")
	work := rewardOf(t, d, 1)
	require.InDelta(t, -0.05, work["points"], 1e-9)
	qc := work["quality_check"].(map[string]any)
	require.Equal(t, "work_v1", qc["question"])
	require.Equal(t, "openai/test-grader", qc["model"])
	require.InDelta(t, -0.02, qc["points"], 1e-9)
	answer := rewardOf(t, d, 3)
	require.InDelta(t, 0.275, answer["points"], 1e-9)
	require.Equal(t, "quality_check", answer["lines"].([]any)[0].(map[string]any)["rule"])

	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := e.srv.Snapshots.Query(ctx, e.aliceID, "SELECT (SELECT sum(score) FROM step_labels WHERE actor = 'agent'), (SELECT max(policy) FROM task_scores)")
		require.NoError(t, err)
		if v, ok := r.Rows[0][0].(float64); ok && math.Abs(v-0.225) < 1e-9 {
			require.Equal(t, stepscores.Policy+"+"+stepscores.CheckPolicy, r.Rows[0][1])
			break
		}
		require.True(t, time.Now().Before(deadline), "snapshot never blended the checks: %v", r.Rows)
		time.Sleep(50 * time.Millisecond)
	}

	// The user confirms the answer: the reaction scores it, its check no
	// longer applies; the work keeps its check and gets credit back.
	_, err = c.ImportTraces(ctx, withKey(e.alice, &criticv1.ImportTracesRequest{Format: "stash", Data: grownRefund}))
	require.NoError(t, err)
	d, err = e.srv.Queries.GetTrace(ctx, e.aliceID, id)
	require.NoError(t, err)
	left := labels.ToLabel(labels.Chunks(domainSteps(t, d)), map[string]bool{cs[0].ID: true, cs[1].ID: true, cs[2].ID: true})
	require.Len(t, left, 1)
	res, err = e.srv.Cmds.RecordStepLabels.Handle(ctx, commands.RecordStepLabels{Actor: worker, Labels: traces.StepLabelsInput{TraceID: id, Revision: 2, Model: "openai/test-labeler", Labels: []labels.Label{
		{ChunkID: left[0].ID, TaskID: "t", Actor: labels.ActorUser, Intent: labels.IntentFeedback, Verdict: labels.VerdictConfirmed, Sentiment: labels.SentimentPositive}}}})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, res.LastEventID))
	d, err = e.srv.Queries.GetTrace(ctx, e.aliceID, id)
	require.NoError(t, err)
	require.Equal(t, "success", d.StepScores.Outcome)
	require.InDelta(t, 0.95, *d.StepScores.TraceScore, 1e-9, "confirmed +1 plus the checked lookup −0.05")
	require.NotContains(t, rewardOf(t, d, 3), "quality_check")
	require.InDelta(t, 0.19, rewardOf(t, d, 1)["score"], 1e-9, "−0.05 + 0.3×1×0.8")
}
