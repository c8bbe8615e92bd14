package connectapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

// ListBaseModels answers GET /base-models' list (here: no worker has
// reported, so the hub default, unreachable, and the hint that says to
// start one); RescoreTrace answers REST's errors for "Score again" while
// no shared-evaluator release is live, and for another account's trace.
func TestBaseModelsAndRescoreOverConnect(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	bc := criticv1connect.NewBaseModelServiceClient(http.DefaultClient, e.url)
	got, err := bc.ListBaseModels(ctx, withKey(e.aliceRO, &criticv1.ListBaseModelsRequest{}))
	require.NoError(t, err, "listing is reading: a read-only key may")
	code, body := e.rest(t, "GET", "/base-models", e.alice, nil)
	require.Equal(t, http.StatusOK, code)
	var rest struct {
		Bases []struct {
			ID        string `json:"id"`
			Reachable bool   `json:"reachable"`
			Default   bool   `json:"default"`
		} `json:"bases"`
		Hint *string `json:"hint"`
	}
	require.NoError(t, json.Unmarshal(body, &rest))
	require.Len(t, got.Msg.Bases, len(rest.Bases))
	require.NotEmpty(t, got.Msg.Bases)
	for i, b := range rest.Bases {
		require.Equal(t, b.ID, got.Msg.Bases[i].Id)
		require.Equal(t, b.Reachable, got.Msg.Bases[i].Reachable)
		require.Equal(t, b.Default, got.Msg.Bases[i].Default)
	}
	require.NotNil(t, rest.Hint)
	require.Equal(t, *rest.Hint, got.Msg.GetHint())
	require.Contains(t, got.Msg.GetHint(), "critic worker")
	require.Zero(t, got.Msg.Compute.Workers)

	_, shipping := e.importTwo(t, e.alice)
	ec := criticv1connect.NewEvaluatorServiceClient(http.DefaultClient, e.url)
	_, err = ec.RescoreTrace(ctx, withKey(e.alice, &criticv1.RescoreTraceRequest{TraceId: shipping}))
	ce := requireCode(t, err, connect.CodeAborted)
	require.Contains(t, ce.Message(), "no shared evaluator release is live")
	code, _ = e.rest(t, "POST", "/traces/"+shipping+"/evaluator/rescore", e.alice, nil)
	require.Equal(t, http.StatusConflict, code)
	_, err = ec.RescoreTrace(ctx, withKey(e.bob, &criticv1.RescoreTraceRequest{TraceId: shipping}))
	requireCode(t, err, connect.CodeNotFound)
	_, err = ec.RescoreTrace(ctx, withKey(e.aliceRO, &criticv1.RescoreTraceRequest{TraceId: shipping}))
	requireCode(t, err, connect.CodePermissionDenied)
}
