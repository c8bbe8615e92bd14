package connectapi_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

const labeledLine = `{"id":"r1","title":"Refund","steps":[` +
	`{"role":"user","content":"Refund order 1","metadata":{"label":{"chunk_id":"c1","task_id":"t1","actor":"user","intent":"request","verdict":"none","verdict_target":null,"sentiment":"neutral","evidence":"","note":""}}},` +
	`{"role":"assistant","content":"Refunded.","metadata":{"label":{"chunk_id":"c2","task_id":"t1","actor":"agent","type":"answer","effect":"none","result":"none","duplicate_of":null,"is_output":true,"outcome":"solved","stance":"confident","coverage":"full","evidence":"","note":""}}},` +
	`{"role":"user","content":"no, that's wrong","metadata":{"label":{"chunk_id":"c3","task_id":"t1","actor":"user","intent":"feedback","verdict":"rejected_confident","verdict_target":"c2","sentiment":"negative","evidence":"wrong","note":""}}}]}`

// TestAssessmentsOverConnect: GetTrace carries step_scores and sections,
// and the two assessment RPCs apply REST's checks and answer unavailable.
func TestAssessmentsOverConnect(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := e.client()
	imp, err := c.ImportTraces(ctx, withKey(e.alice, &criticv1.ImportTracesRequest{Format: "stash", Data: labeledLine}))
	require.NoError(t, err)
	id := imp.Msg.TraceIds[0]

	got, err := c.GetTrace(ctx, withKey(e.alice, &criticv1.GetTraceRequest{TraceId: id}))
	require.NoError(t, err)
	tr := got.Msg.Trace
	require.NotNil(t, tr.StepScores)
	require.Equal(t, "failure", tr.StepScores.Outcome)
	require.Equal(t, "labels", tr.StepScores.Source)
	require.InDelta(t, -1.0, tr.StepScores.GetTraceScore(), 1e-9)
	require.Len(t, tr.StepScores.Tasks, 1)
	require.Equal(t, tr.Steps[1].Id, tr.StepScores.Tasks[0].GetAnswerStepId())
	require.Equal(t, -1.0, tr.Steps[1].Metadata.Fields["reward"].GetStructValue().Fields["score"].GetNumberValue())
	require.Len(t, tr.Sections, 1)
	require.Equal(t, "t1", tr.Sections[0].GetTaskId())
	require.True(t, tr.Sections[0].Graded)
	require.Equal(t, "imported", tr.Labeling.State)
	require.EqualValues(t, 3, tr.Labeling.Labeled)

	rng := []*criticv1.StepRange{{FirstStepId: tr.Steps[0].Id, LastStepId: tr.Steps[2].Id}}
	_, err = c.SummarizeSections(ctx, withKey(e.bob, &criticv1.SummarizeSectionsRequest{TraceId: id, Ranges: rng}))
	requireCode(t, err, connect.CodeNotFound)
	_, err = c.SummarizeSections(ctx, withKey(e.alice, &criticv1.SummarizeSectionsRequest{TraceId: id}))
	requireCode(t, err, connect.CodeInvalidArgument)
	// Generating an assessment records events and spends provider budget:
	// a read-only key may not trigger it.
	_, err = c.SummarizeSections(ctx, withKey(e.aliceRO, &criticv1.SummarizeSectionsRequest{TraceId: id, Ranges: rng}))
	requireCode(t, err, connect.CodePermissionDenied)
	_, err = c.EstimateCompletion(ctx, withKey(e.aliceRO, &criticv1.EstimateCompletionRequest{TraceId: id}))
	requireCode(t, err, connect.CodePermissionDenied)
	sum, err := c.SummarizeSections(ctx, withKey(e.alice, &criticv1.SummarizeSectionsRequest{TraceId: id, Ranges: rng}))
	require.NoError(t, err)
	require.True(t, sum.Msg.Unavailable)
	require.False(t, sum.Msg.Pending)
	require.Contains(t, sum.Msg.GetUnavailableReason(), "CRITIC_FAST_MODEL")
	require.Len(t, sum.Msg.Sections, 1)
	require.Nil(t, sum.Msg.Sections[0].Score)
	require.Nil(t, sum.Msg.Sections[0].Title)

	_, err = c.EstimateCompletion(ctx, withKey(e.bob, &criticv1.EstimateCompletionRequest{TraceId: id}))
	requireCode(t, err, connect.CodeNotFound)
	comp, err := c.EstimateCompletion(ctx, withKey(e.alice, &criticv1.EstimateCompletionRequest{TraceId: id}))
	require.NoError(t, err)
	require.True(t, comp.Msg.Unavailable)
	require.Len(t, comp.Msg.Tasks, 1)
	require.Empty(t, comp.Msg.Tasks[0].Checkpoints)

	// RetryLabeling: owner and write checks, then the missing model named.
	_, err = c.RetryLabeling(ctx, withKey(e.bob, &criticv1.RetryLabelingRequest{TraceId: id}))
	requireCode(t, err, connect.CodeNotFound)
	_, err = c.RetryLabeling(ctx, withKey(e.aliceRO, &criticv1.RetryLabelingRequest{TraceId: id}))
	requireCode(t, err, connect.CodePermissionDenied)
	_, err = c.RetryLabeling(ctx, withKey(e.alice, &criticv1.RetryLabelingRequest{TraceId: id}))
	requireCode(t, err, connect.CodeUnavailable)
	require.ErrorContains(t, err, "CRITIC_STEP_LABEL_MODEL")

	// RescoreLabels (the rescore control): the same checks.
	_, err = c.RescoreLabels(ctx, withKey(e.bob, &criticv1.RescoreLabelsRequest{TraceId: id}))
	requireCode(t, err, connect.CodeNotFound)
	_, err = c.RescoreLabels(ctx, withKey(e.aliceRO, &criticv1.RescoreLabelsRequest{TraceId: id}))
	requireCode(t, err, connect.CodePermissionDenied)
	_, err = c.RescoreLabels(ctx, withKey(e.alice, &criticv1.RescoreLabelsRequest{TraceId: id}))
	requireCode(t, err, connect.CodeUnavailable)
	require.ErrorContains(t, err, "CRITIC_STEP_LABEL_MODEL")
}
