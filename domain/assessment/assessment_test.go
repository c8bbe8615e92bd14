package assessment

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/stepscores"
)

func jsonMap(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return m
}

func labeled(t *testing.T) ([]domain.Step, []string) {
	steps := []domain.Step{
		{Role: domain.RoleSystem, Content: "be brief"},
		{Role: domain.RoleUser, Content: "refund order 1182", Metadata: map[string]any{"label": jsonMap(t,
			`{"chunk_id":"c1","task_id":"t1","actor":"user","intent":"request","verdict":"none","verdict_target":null,"sentiment":"neutral","evidence":"refund","note":""}`)}},
		{Role: domain.RoleAssistant, ToolName: "lookup_order", ToolInput: map[string]any{"id": "1182"}, ToolCallID: "k1", Metadata: map[string]any{"label": jsonMap(t,
			`{"chunk_id":"c2","task_id":"t1","actor":"agent","type":"tool_call","effect":"lookup","result":"ok","duplicate_of":null,"is_output":false,"outcome":"none","stance":"none","coverage":"none","evidence":"","note":""}`)}},
		{Role: domain.RoleTool, Content: "delivered", ToolCallID: "k1"},
		{Role: domain.RoleAssistant, Content: "Refunded.", Metadata: map[string]any{"label": jsonMap(t,
			`{"chunk_id":"c3","task_id":"t1","actor":"agent","type":"answer","effect":"none","result":"none","duplicate_of":null,"is_output":true,"outcome":"solved","stance":"confident","coverage":"full","evidence":"Refunded","note":""}`)}},
		{Role: domain.RoleUser, Content: "thanks, it worked", Metadata: map[string]any{"label": jsonMap(t,
			`{"chunk_id":"c4","task_id":"t1","actor":"user","intent":"feedback","verdict":"confirmed","verdict_target":"c3","sentiment":"positive","evidence":"it worked","note":""}`)}},
	}
	ids := make([]string, len(steps))
	for i := range ids {
		ids[i] = fmt.Sprintf("id%d", i)
	}
	return steps, ids
}

func TestOfImportedLabels(t *testing.T) {
	t.Parallel()
	steps, ids := labeled(t)
	a := Of(steps, ids, nil, nil, nil)
	require.NotNil(t, a.StepScores)
	ss := a.StepScores
	require.Equal(t, SourceLabels, ss.Source)
	require.Equal(t, stepscores.Policy, ss.Policy)
	require.Equal(t, stepscores.OutcomeSuccess, ss.Outcome)
	require.Len(t, ss.Tasks, 1)
	task := ss.Tasks[0]
	require.Equal(t, "id1", task.FirstStepID)
	require.Equal(t, "id5", task.LastStepID)
	require.Equal(t, "id4", *task.AnswerStepID)
	require.InDelta(t, 0.97, task.Score, 1e-9)
	require.InDelta(t, 0.97, *ss.TraceScore, 1e-9)
	require.Empty(t, ss.Problems)
	require.Nil(t, a.Rewards[0])
	require.Nil(t, a.Rewards[1], "user steps carry no reward")
	require.InDelta(t, -0.03+0.24, a.Rewards[2]["score"].(float64), 1e-9)
	require.Nil(t, a.Rewards[3], "the breakdown sits on the call, not its result")
	require.Equal(t, 1.0, a.Rewards[4]["score"])
	require.Equal(t, "c4", a.Rewards[4]["reacted_by"])
	rows := a.Rows(ids)
	require.Len(t, rows, 4)
	require.Equal(t, 2, rows[1].StepIndex)
	require.Equal(t, "c2", rows[1].Label.ChunkID)
	require.InDelta(t, 0.21, *rows[1].Score, 1e-9)
	require.Equal(t, 0, *rows[1].Credit)
	require.Nil(t, rows[0].Score)
	require.Len(t, a.Sections, 1)
	require.Equal(t, "t1", *a.Sections[0].TaskID)

	// No labels: nothing scored, sections still there.
	plain := make([]domain.Step, len(steps))
	for i, s := range steps {
		s.Metadata = nil
		plain[i] = s
	}
	b := Of(plain, ids, nil, nil, nil)
	require.Nil(t, b.StepScores)
	require.Len(t, b.Sections, 2)
	require.Empty(t, b.Rows(ids))
}

func TestOfImportedRubricAndReward(t *testing.T) {
	t.Parallel()
	steps, ids := labeled(t)
	steps[2].Metadata["reward"] = jsonMap(t, `{"score": 0.4, "credit": 1, "probabilities": {"negative": 0.1, "neutral": 0.2, "positive": 0.6, "strongly_positive": 0.1}}`)
	steps[4].Metadata["reward"] = jsonMap(t, `{"score": 0.9, "probabilities": {"positive": "lots"}}`)
	meta := map[string]any{"rubric_summary": jsonMap(t, `{"policy":"offline_v3","trace_score":0.8,"outcome":"success",
		"tasks":[{"task_id":"t1","first_step_id":"id1","last_step_id":"id5","answer_step_id":"id4","answer_points":1,"work":-0.03,"score":0.8,"capped":false}]}`)}
	a := Of(steps, ids, meta, nil, nil)
	require.Equal(t, SourceImported, a.StepScores.Source)
	require.Equal(t, "offline_v3", a.StepScores.Policy)
	require.InDelta(t, 0.8, *a.StepScores.TraceScore, 1e-9)
	require.Equal(t, 4, *a.StepScores.Tasks[0].AnswerIndex)
	require.NotNil(t, a.StepScores.Problems)
	require.Equal(t, 0.4, a.Rewards[2]["score"], "an imported breakdown is used as it is")
	require.InDelta(t, 0.35, a.Rewards[2]["expected_credit"].(float64), 1e-9, "expected credit derived from the saved probabilities")
	require.Contains(t, a.Rewards[4], "expected_credit")
	require.Nil(t, a.Rewards[4]["expected_credit"], "a malformed distribution stays unscored")
	rows := a.Rows(ids)
	require.InDelta(t, 0.35, *rows[1].ExpectedCredit, 1e-9)
	require.Equal(t, 1, *rows[1].Credit)

	// A rubric summary that is not in the step_scores shape is not used.
	for _, bad := range []string{`{"outcome":"great"}`, `{"outcome":"success","tasks":[{"task_id":"t","score":3}]}`, `{"outcome":"success","trace_score":"high"}`} {
		a := Of(steps, ids, map[string]any{"rubric_summary": jsonMap(t, bad)}, nil, nil)
		require.Equal(t, SourceLabels, a.StepScores.Source, bad)
	}
}

func TestLabelingStatus(t *testing.T) {
	t.Parallel()
	steps, ids := labeled(t)
	a := Of(steps, ids, nil, nil, nil)
	require.Equal(t, LabelingStatus{State: LabelingImported, Chunks: 4, Labeled: 4}, a.Labeling)
	plain := make([]domain.Step, len(steps))
	for i, s := range steps {
		s.Metadata = nil
		plain[i] = s
	}
	a = Of(plain, ids, nil, nil, nil)
	require.Equal(t, LabelingUnlabeled, a.Labeling.State)
	require.Equal(t, 4, a.Labeling.ToLabel)
	require.Contains(t, *a.Labeling.Reason, "CRITIC_STEP_LABEL_MODEL")
	require.Equal(t, LabelingWaiting, Of(plain[:2], ids[:2], nil, nil, nil).Labeling.State, "only a request: the agent has not responded")
	cs := a.Labels.Chunks
	yes := true
	stored := map[string]labels.Label{cs[2].ID: {ChunkID: cs[2].ID, TaskID: "t", Actor: labels.ActorAgent, Type: labels.TypeAnswer,
		Effect: labels.EffectNone, Result: labels.ResultNone, IsOutput: &yes, Outcome: labels.OutcomeSolved, Stance: labels.StanceConfident, Coverage: labels.CoverageFull}}
	a = Of(plain, ids, nil, stored, nil)
	require.Equal(t, LabelingStatus{State: LabelingPartial, Chunks: 4, Labeled: 1, ToLabel: 3}, a.Labeling)
	require.NotNil(t, a.StepScores, "model-made labels score like imported ones")
}
