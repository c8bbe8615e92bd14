package connectapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

// TestCriterionValuesOverConnect: a criterion's value (criteria defined
// over REST) is added, edited and exported over Connect with REST's rules
// and answers: criterion_id and value on the annotation, on the trace, in
// the export; a value on the wrong target is INVALID_ARGUMENT naming
// step_id; CreateRewardModel takes training_config.criterion and the
// model shows it with the criterion's name.
func TestCriterionValuesOverConnect(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := criticv1connect.NewAnnotationServiceClient(http.DefaultClient, e.url)
	refund, _ := e.importTwo(t, e.alice)
	call := refund.Steps[1] // lookup_order
	status, body := e.rest(t, "POST", "/criteria", e.alice, map[string]any{"name": "Tool choice", "kind": "scale", "scale_max": 5, "applies_to": "tool_call"})
	require.Equal(t, http.StatusCreated, status, string(body))
	var crit struct {
		CriterionID string `json:"criterion_id"`
	}
	require.NoError(t, json.Unmarshal(body, &crit))

	added, err := c.AddAnnotation(ctx, withKey(e.alice, &criticv1.AddAnnotationRequest{TraceId: refund.Summary.Id, StepId: new(call.Id),
		CriterionId: new(crit.CriterionID), Value: structpb.NewNumberValue(4)}))
	require.NoError(t, err)
	a := added.Msg.Annotation
	require.Equal(t, crit.CriterionID, a.GetCriterionId())
	require.EqualValues(t, 4, a.Value.GetNumberValue())
	require.Nil(t, a.Rating)

	_, err = c.AddAnnotation(ctx, withKey(e.alice, &criticv1.AddAnnotationRequest{TraceId: refund.Summary.Id, StepId: new(refund.Steps[3].Id),
		CriterionId: new(crit.CriterionID), Value: structpb.NewNumberValue(4)}))
	var ce *connect.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, connect.CodeInvalidArgument, ce.Code())
	requireDetail(t, ce, "invalid_annotation", "step_id")

	edited, err := c.EditAnnotation(ctx, withKey(e.alice, &criticv1.EditAnnotationRequest{AnnotationId: a.Id, Value: structpb.NewNumberValue(2)}))
	require.NoError(t, err)
	require.EqualValues(t, 2, edited.Msg.Annotation.Value.GetNumberValue())

	got, err := e.client().GetTrace(ctx, withKey(e.alice, &criticv1.GetTraceRequest{TraceId: refund.Summary.Id}))
	require.NoError(t, err)
	require.Len(t, got.Msg.Trace.Annotations, 1)
	require.True(t, proto.Equal(edited.Msg.Annotation, got.Msg.Trace.Annotations[0]))

	stream, err := c.ExportAnnotations(ctx, withKey(e.alice, &criticv1.ExportAnnotationsRequest{}))
	require.NoError(t, err)
	var exported []*criticv1.ExportedAnnotation
	for stream.Receive() {
		exported = append(exported, stream.Msg().Annotation)
	}
	require.NoError(t, stream.Err())
	require.Len(t, exported, 1)
	require.Equal(t, crit.CriterionID, exported[0].GetCriterionId())
	require.EqualValues(t, 2, exported[0].Value.GetNumberValue())

	// Training on the criterion: stored and shown with its name.
	models := criticv1connect.NewRewardModelServiceClient(http.DefaultClient, e.url)
	_, err = models.CreateRewardModel(ctx, withKey(e.alice, &criticv1.CreateRewardModelRequest{Name: "x", TraceIds: []string{refund.Summary.Id},
		TrainingConfig: &criticv1.TrainingConfig{Criterion: new("00000000-0000-0000-0000-000000000000")}}))
	require.ErrorAs(t, err, &ce)
	require.Equal(t, connect.CodeInvalidArgument, ce.Code())
	requireDetail(t, ce, "invalid_request", "training_config.criterion")
	created, err := models.CreateRewardModel(ctx, withKey(e.alice, &criticv1.CreateRewardModelRequest{Name: "on tool choice", TraceIds: []string{refund.Summary.Id},
		TrainingConfig: &criticv1.TrainingConfig{Criterion: new(crit.CriterionID)}}))
	require.NoError(t, err)
	m, err := models.GetRewardModel(ctx, withKey(e.alice, &criticv1.GetRewardModelRequest{RewardModelId: created.Msg.RewardModel.Id}))
	require.NoError(t, err)
	require.Equal(t, crit.CriterionID, m.Msg.RewardModel.TrainingConfig.GetCriterion())
	require.Equal(t, "Tool choice", m.Msg.RewardModel.TrainingConfig.GetCriterionName())
	require.Equal(t, "explicit", m.Msg.RewardModel.TrainingConfig.AnnotationSource)
}

// TestCriteriaServiceOverConnect: criteria and guidelines are defined,
// listed, changed and archived over Connect with REST's rules — a bad
// definition is INVALID_ARGUMENT naming the field, a taken name ABORTED —
// and REST sees the same criteria.
func TestCriteriaServiceOverConnect(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := criticv1connect.NewCriteriaServiceClient(http.DefaultClient, e.url)
	tone, err := c.DefineCriterion(ctx, withKey(e.alice, &criticv1.DefineCriterionRequest{Name: "Tone", Kind: "categorical", AppliesTo: "assistant",
		Labels: []*criticv1.LabelInput{{Name: "good", Score: proto.Int32(1)}, {Name: "bad", Score: proto.Int32(-1)}}}))
	require.NoError(t, err)
	require.Equal(t, "Tone", tone.Msg.Criterion.Name)
	require.Len(t, tone.Msg.Criterion.Labels, 2)
	_, err = c.DefineCriterion(ctx, withKey(e.alice, &criticv1.DefineCriterionRequest{Name: "Scale", Kind: "scale", AppliesTo: "trace", ScaleMax: proto.Int32(11)}))
	var ce *connect.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, connect.CodeInvalidArgument, ce.Code())
	requireDetail(t, ce, "invalid_criterion", "scale_max")
	_, err = c.DefineCriterion(ctx, withKey(e.alice, &criticv1.DefineCriterionRequest{Name: "tone", Kind: "binary", AppliesTo: "trace"}))
	require.ErrorAs(t, err, &ce)
	require.Equal(t, connect.CodeAborted, ce.Code())

	changed, err := c.ChangeCriterion(ctx, withKey(e.alice, &criticv1.ChangeCriterionRequest{CriterionId: tone.Msg.Criterion.CriterionId,
		SetLabels: true, Labels: []*criticv1.LabelInput{{Name: "good", Score: proto.Int32(1)}, {Name: "rude", Score: proto.Int32(-1)}, {Name: "meh"}}}))
	require.NoError(t, err)
	require.Equal(t, "rude", changed.Msg.Criterion.Labels[1].Name)
	status, body := e.rest(t, "GET", "/criteria", e.alice, nil)
	require.Equal(t, http.StatusOK, status, string(body))
	require.Contains(t, string(body), `{"name":"meh","score":0}`)

	_, err = c.ArchiveCriterion(ctx, withKey(e.alice, &criticv1.ArchiveCriterionRequest{CriterionId: tone.Msg.Criterion.CriterionId}))
	require.NoError(t, err)
	list, err := c.ListCriteria(ctx, withKey(e.alice, &criticv1.ListCriteriaRequest{}))
	require.NoError(t, err)
	require.Empty(t, list.Msg.Criteria)
	list, err = c.ListCriteria(ctx, withKey(e.alice, &criticv1.ListCriteriaRequest{IncludeArchived: true}))
	require.NoError(t, err)
	require.Len(t, list.Msg.Criteria, 1)
	require.True(t, list.Msg.Criteria[0].Archived)

	g, err := c.GetGuidelines(ctx, withKey(e.alice, &criticv1.GetGuidelinesRequest{}))
	require.NoError(t, err)
	require.Empty(t, g.Msg.Markdown)
	require.Nil(t, g.Msg.UpdatedAt)
	set, err := c.SetGuidelines(ctx, withKey(e.alice, &criticv1.SetGuidelinesRequest{Markdown: "# Be strict"}))
	require.NoError(t, err)
	require.Equal(t, "# Be strict", set.Msg.Markdown)
	require.NotNil(t, set.Msg.UpdatedAt)
	status, body = e.rest(t, "GET", "/guidelines", e.alice, nil)
	require.Equal(t, http.StatusOK, status, string(body))
	require.Contains(t, string(body), `"markdown":"# Be strict"`)
}
