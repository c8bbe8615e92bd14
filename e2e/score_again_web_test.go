package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/llm/llmtest"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

// TestScoreAgain: with shared-evaluator release 1 live (trained and scoring
// on a real worker), a click on the viewer's "Score again" (web/e2e/
// score-again.spec.ts) records a rescore request for the trace's current
// revision and the worker scores it once more; the Connect twin
// (EvaluatorService.RescoreTrace) does the same, answers the trace's
// evaluator block, and refuses another account's trace and a read-only
// key. BaseModelService.ListBaseModels lists the bases GET /base-models
// lists.
func TestScoreAgain(t *testing.T) {
	webDir := requireBrowser(t)
	srv := llmtest.New(t)
	srv.Handle(scriptedClassifier)
	llmEnv := []string{"CRITIC_FEEDBACK_MODEL=openai/scripted-classifier", "CRITIC_FEEDBACK_API_BASE=" + srv.URL, "OPENAI_API_KEY=test-key",
		"CRITIC_FAST_MODEL=openai/scripted-fast", "CRITIC_FAST_API_BASE=" + srv.URL}
	in, kafkaPort := startServeForJobs(t, llmEnv...)
	key := in.newUser("score-again", false)
	base := tinyBase(t, in)
	startWorkerWith(t, in, kafkaPort, "sa1", llmEnv...)
	bootstrapEvaluator(t, in, key, base)
	var traceID string
	require.NoError(t, in.pool.QueryRow(context.Background(), `SELECT id FROM rm_traces WHERE external_id = 'ev-0'`).Scan(&traceID))
	ctx := context.Background()
	count := func(typ string) int {
		var n int
		require.NoError(t, in.pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE type = $1 AND stream = 'trace/' || $2`, typ, traceID).Scan(&n))
		return n
	}
	require.Zero(t, count("evaluator.trace_rescore_requested.v1"))
	scoredBefore := count("evaluator.trace_scored.v1")

	require.Equal(t, 1, runSpec(t, webDir, "score again", "score-again.spec.ts", in.url, key, "CRITIC_E2E_EVALUATOR_TRACE="+traceID))
	require.Equal(t, 1, count("evaluator.trace_rescore_requested.v1"), "the click recorded one rescore request")
	require.Eventually(t, func() bool { return count("evaluator.trace_scored.v1") == scoredBefore+1 }, time.Minute, 100*time.Millisecond,
		"release 1 scored the trace once more")

	// The Connect twin.
	ec := criticv1connect.NewEvaluatorServiceClient(http.DefaultClient, in.url)
	req := func(k string, m *criticv1.RescoreTraceRequest) *connect.Request[criticv1.RescoreTraceRequest] {
		r := connect.NewRequest(m)
		r.Header().Set("Authorization", "Bearer "+k)
		return r
	}
	got, err := ec.RescoreTrace(ctx, req(key, &criticv1.RescoreTraceRequest{TraceId: traceID}))
	require.NoError(t, err)
	// scoring, or scored already: the running worker is quick with a tiny
	// model.
	require.Contains(t, []string{"scoring", "scored"}, got.Msg.Evaluator.Status)
	require.EqualValues(t, 1, got.Msg.Evaluator.GetLiveRelease())
	require.Len(t, got.Msg.Evaluator.ActionScores, 1, "the trace's one action keeps a score throughout")
	require.Equal(t, 2, count("evaluator.trace_rescore_requested.v1"))
	require.Eventually(t, func() bool { return count("evaluator.trace_scored.v1") == scoredBefore+2 }, time.Minute, 100*time.Millisecond)
	other := in.newUser("someone-else", false)
	_, err = ec.RescoreTrace(ctx, req(other, &criticv1.RescoreTraceRequest{TraceId: traceID}))
	require.Equal(t, connect.CodeNotFound, connect.CodeOf(err), "another account's trace")
	out, err := in.cli("users", "issue-key", "--name", "score-again", "--read-only-key")
	require.NoError(t, err, out)
	ro := keyRe.FindStringSubmatch(out)
	require.NotNil(t, ro, out)
	_, err = ec.RescoreTrace(ctx, req(ro[1], &criticv1.RescoreTraceRequest{TraceId: traceID}))
	require.Equal(t, connect.CodePermissionDenied, connect.CodeOf(err), "a read-only key")
	require.Equal(t, 2, count("evaluator.trace_rescore_requested.v1"), "refused requests record nothing")

	// The base models, as REST lists them: the worker reported the tiny
	// base's root and the hub default.
	bc := criticv1connect.NewBaseModelServiceClient(http.DefaultClient, in.url)
	lr := connect.NewRequest(&criticv1.ListBaseModelsRequest{})
	lr.Header().Set("Authorization", "Bearer "+key)
	bl, err := bc.ListBaseModels(ctx, lr)
	require.NoError(t, err)
	rest := in.do("GET", "/api/v1/rm/base-models", key, nil).JSON(t)
	require.Len(t, bl.Msg.Bases, len(rest["bases"].([]any)))
	for i, raw := range rest["bases"].([]any) {
		b := raw.(map[string]any)
		require.Equal(t, b["id"], bl.Msg.Bases[i].Id)
		require.Equal(t, b["source"], bl.Msg.Bases[i].Source)
		require.Equal(t, b["reachable"], bl.Msg.Bases[i].Reachable)
		require.Equal(t, b["default"], bl.Msg.Bases[i].Default)
	}
	require.EqualValues(t, rest["compute"].(map[string]any)["workers"], bl.Msg.Compute.Workers)
	require.EqualValues(t, 1, bl.Msg.Compute.Workers, "the worker reported")
}
