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

// The evaluator service answers what REST answers: consent with its notice
// and the same errors, an empty queue, and the waiting status.
func TestEvaluatorServiceMatchesREST(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	_, shipping := e.importTwo(t, e.alice)
	c := criticv1connect.NewEvaluatorServiceClient(http.DefaultClient, e.url)

	got, err := c.SetTraceContribution(ctx, withKey(e.alice, &criticv1.SetTraceContributionRequest{TraceId: shipping, Contribute: true}))
	require.NoError(t, err)
	require.True(t, got.Msg.Contribute)
	code, body := e.rest(t, "GET", "/traces/"+shipping, e.alice, nil)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `"contribute":true`)
	got, err = c.SetTraceContribution(ctx, withKey(e.alice, &criticv1.SetTraceContributionRequest{TraceId: shipping, Contribute: false}))
	require.NoError(t, err)
	code, body = e.rest(t, "PUT", "/traces/"+shipping+"/contribution", e.alice, map[string]any{"contribute": false})
	require.Equal(t, http.StatusOK, code)
	var rest struct{ Notice string }
	require.NoError(t, json.Unmarshal(body, &rest))
	require.Equal(t, rest.Notice, got.Msg.Notice)
	require.Contains(t, got.Msg.Notice, "cannot unlearn")

	_, err = c.SetTraceContribution(ctx, withKey(e.bob, &criticv1.SetTraceContributionRequest{TraceId: shipping, Contribute: true}))
	require.Equal(t, connect.CodeNotFound, connect.CodeOf(err), "another owner's trace")
	_, err = c.SetTraceContribution(ctx, withKey(e.aliceRO, &criticv1.SetTraceContributionRequest{TraceId: shipping, Contribute: true}))
	require.Equal(t, connect.CodePermissionDenied, connect.CodeOf(err), "a read-only key")

	q, err := c.ComparisonQueue(ctx, withKey(e.alice, &criticv1.ComparisonQueueRequest{}))
	require.NoError(t, err)
	require.Empty(t, q.Msg.Items)
	_, err = c.ComparisonQueue(ctx, withKey(e.alice, &criticv1.ComparisonQueueRequest{Limit: 101}))
	require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err))
	_, err = c.ReviewComparison(ctx, withKey(e.alice, &criticv1.ReviewComparisonRequest{ModelId: shipping, FindingId: "f", Left: "original", Choice: "left"}))
	require.Equal(t, connect.CodeNotFound, connect.CodeOf(err))

	ev, err := c.GetEvaluator(ctx, withKey(e.alice, &criticv1.GetEvaluatorRequest{}))
	require.NoError(t, err)
	require.Equal(t, "waiting_for_first_release", ev.Msg.Status)
	require.Equal(t, int32(30), ev.Msg.MinSlice)
	require.Empty(t, ev.Msg.Benchmarks)
}

// Consent on a Connect import, and in the trace summaries, as in REST.
func TestConnectImportSetsConsent(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	tc := criticv1connect.NewTraceServiceClient(http.DefaultClient, e.url)
	line := `{"id":"consent-1","title":"opted in on import","steps":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`
	on := true
	imp, err := tc.ImportTraces(ctx, withKey(e.alice, &criticv1.ImportTracesRequest{Format: "stash", Data: line, Contribute: &on}))
	require.NoError(t, err)
	id := imp.Msg.TraceIds[0]
	d, err := tc.GetTrace(ctx, withKey(e.alice, &criticv1.GetTraceRequest{TraceId: id}))
	require.NoError(t, err)
	require.True(t, d.Msg.Trace.Summary.Contribute)
	code, body := e.rest(t, "GET", "/traces/"+id, e.alice, nil)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `"contribute":true`)
	// Unset leaves it as it was: a re-import keeps the consent.
	_, err = tc.ImportTraces(ctx, withKey(e.alice, &criticv1.ImportTracesRequest{Format: "stash", Data: line}))
	require.NoError(t, err)
	list, err := tc.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{}))
	require.NoError(t, err)
	var seen bool
	for _, s := range list.Msg.Traces {
		if s.Id == id {
			seen = true
			require.True(t, s.Contribute)
		}
	}
	require.True(t, seen)
}
