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

// GepaService answers REST's errors: a model that has not succeeded is
// INVALID_ARGUMENT (REST 422), another owner's model and unknown runs are
// NOT_FOUND, and a bad budget is refused before anything is queued. (The
// succeeded path runs in e2e's TestGepaRunEndToEnd, which has a worker.)
func TestGepaService(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	rm := criticv1connect.NewRewardModelServiceClient(http.DefaultClient, e.url)
	c := criticv1connect.NewGepaServiceClient(http.DefaultClient, e.url)
	refund, _ := e.importTwo(t, e.alice)
	created, err := rm.CreateRewardModel(ctx, withKey(e.alice, &criticv1.CreateRewardModelRequest{Name: "m", TraceIds: []string{refund.Summary.Id}}))
	require.NoError(t, err)
	id := created.Msg.RewardModel.Id

	_, err = c.CreateGepaRun(ctx, withKey(e.alice, &criticv1.CreateGepaRunRequest{RewardModelId: id}))
	ce := requireCode(t, err, connect.CodeInvalidArgument)
	require.Contains(t, ce.Message(), "has not succeeded")
	_, err = c.CreateGepaRun(ctx, withKey(e.bob, &criticv1.CreateGepaRunRequest{RewardModelId: id}))
	requireCode(t, err, connect.CodeNotFound)
	_, err = c.CreateGepaRun(ctx, withKey(e.alice, &criticv1.CreateGepaRunRequest{RewardModelId: id, MaxMetricCalls: proto.Int32(0)}))
	requireCode(t, err, connect.CodeInvalidArgument)
	_, err = c.CreateGepaRun(ctx, withKey(e.alice, &criticv1.CreateGepaRunRequest{}))
	requireCode(t, err, connect.CodeInvalidArgument)

	_, err = c.GetGepaRun(ctx, withKey(e.alice, &criticv1.GetGepaRunRequest{GepaRunId: "00000000-0000-0000-0000-000000000001"}))
	requireCode(t, err, connect.CodeNotFound)
	_, err = c.GetGepaSkill(ctx, withKey(e.alice, &criticv1.GetGepaSkillRequest{GepaRunId: "nope"}))
	requireCode(t, err, connect.CodeNotFound)
	list, err := c.ListGepaRuns(ctx, withKey(e.alice, &criticv1.ListGepaRunsRequest{}))
	require.NoError(t, err)
	require.Empty(t, list.Msg.GepaRuns, "nothing was queued")
}
