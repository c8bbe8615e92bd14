package connectapi_test

import (
	"context"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

func TestTrainingConfigAndLearningReportOverConnect(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := criticv1connect.NewRewardModelServiceClient(http.DefaultClient, e.url)
	refund, shippingID := e.importTwo(t, e.alice)

	_, err := c.CreateRewardModel(ctx, withKey(e.alice, &criticv1.CreateRewardModelRequest{Name: "x", TraceIds: []string{refund.Summary.Id},
		TrainingConfig: &criticv1.TrainingConfig{AnnotationSource: new("graded-by-hand")}}))
	ce := requireCode(t, err, connect.CodeInvalidArgument)
	require.Contains(t, ce.Message(), "training_config.annotation_source")
	_, err = c.CreateRewardModel(ctx, withKey(e.alice, &criticv1.CreateRewardModelRequest{Name: "x", TraceIds: []string{refund.Summary.Id},
		TrainingConfig: &criticv1.TrainingConfig{InputVersion: proto.Int32(2)}}))
	ce = requireCode(t, err, connect.CodeInvalidArgument)
	require.Contains(t, ce.Message(), "training_config.input_version")

	created, err := c.CreateRewardModel(ctx, withKey(e.alice, &criticv1.CreateRewardModelRequest{Name: "fb", TraceIds: []string{refund.Summary.Id, shippingID},
		TrainingConfig: &criticv1.TrainingConfig{AnnotationSource: new("feedback"), InputVersion: proto.Int32(3), Criteria: []string{"is polite"}}}))
	require.NoError(t, err)
	got, err := c.GetRewardModel(ctx, withKey(e.alice, &criticv1.GetRewardModelRequest{RewardModelId: created.Msg.RewardModel.Id}))
	require.NoError(t, err)
	// No provider in this deployment: no report, and the detail says what to set.
	require.False(t, got.Msg.FeedbackRecorded)
	require.Empty(t, got.Msg.Feedback)
	require.NotNil(t, got.Msg.FeedbackUnavailable)
	require.Contains(t, *got.Msg.FeedbackUnavailable, "CRITIC_FEEDBACK_MODEL")
	require.Empty(t, got.Msg.LlmUsage)

	// REST says the same: feedback null, feedback_unavailable set.
	code, body := e.rest(t, http.MethodGet, "/reward-models/"+created.Msg.RewardModel.Id, e.alice, nil)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `"feedback":null`)
	require.Contains(t, string(body), `"llm_usage":[]`)
	code, body = e.rest(t, http.MethodPost, "/reward-models", e.alice, map[string]any{"name": "x", "trace_ids": []string{refund.Summary.Id},
		"training_config": map[string]any{"input_version": 3, "sampled_actions": 5}})
	require.Equal(t, http.StatusUnprocessableEntity, code, string(body))
	require.Contains(t, string(body), "training_config.sampled_actions")
}
