package connectapi_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/handlers/apiserver"
	"github.com/criticml/critic/handlers/connectapi"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/rest"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/logtest"
	"github.com/criticml/critic/platform/pg"
	"github.com/criticml/critic/platform/pg/pgtest"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

const twoTraces = `{"id":"refund-1","title":"Refund for order 1","metadata":{"agent":"support-bot"},"steps":[{"role":"user","content":"Refund order 1"},{"role":"assistant","content":"","tool_name":"lookup_order","tool_input":{"order_id":"1","full":true},"tool_call_id":"call_1"},{"role":"tool","content":"{\"status\":\"delivered\"}","tool_name":"lookup_order","tool_call_id":"call_1"},{"role":"assistant","content":"Refunded."}]}
{"id":"shipping-2","title":"Where is order 2","steps":[{"role":"user","content":"Where is order 2?"},{"role":"assistant","content":"On its way."}]}
`

// env is one running API process (the same assembly as `critic serve`:
// embedded broker, relay, read-model and snapshot projections, h2c HTTP
// server, REST and every Connect service) over a fresh database, with a few
// accounts.
type env struct {
	srv      *apiserver.Server
	url      string
	pool     *pgxpool.Pool
	blobs    *blob.Local
	logs     *logtest.Buffer // everything the server logged, debug included
	aliceID  string
	alice    string // full-access key
	aliceRO  string // read-only key of the same account
	bob      string // another owner
	disabled string // an account with reward models disabled
}

func start(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	pool, err := pg.Connect(ctx, pgtest.NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := apiserver.Start(ctx, apiserver.Config{Addr: "127.0.0.1:0", WaitTimeout: 30 * time.Second, SnapshotDir: t.TempDir(),
		CommandOptions: []commands.Option{commands.WithSecret("connectapi-test-worker-token")}},
		apiserver.Deps{Pool: pool, Store: eventstore.New(pool, blobs), Blobs: blobs, Log: log},
		func(mux *http.ServeMux, s *apiserver.Server) {
			rest.New(edge.Deps{Cmds: s.Cmds, Queries: s.Queries, Waiter: s.Waiter, Auth: s.Auth, MaxBody: 1 << 20, Blobs: blobs}).Register(mux)
			rest.New(edge.Deps{Query: s.Query, Auth: s.Auth, MaxBody: 1 << 20}).RegisterQuery(mux)
			connectapi.Register(mux, edge.Deps{Cmds: s.Cmds, Queries: s.Queries, Waiter: s.Waiter, Auth: s.Auth,
				Blobs: blobs, Query: s.Query, MaxBody: 1 << 20})
		})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown() })

	e := &env{srv: srv, url: "http://" + srv.Addr, pool: pool, blobs: blobs, logs: logs}
	user := func(name string) (string, string) {
		res, err := srv.Cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: name})
		require.NoError(t, err)
		require.NoError(t, srv.Waiter.Wait(ctx, res.LastEventID))
		return res.UserID, res.APIKey
	}
	var aliceID, disabledID string
	aliceID, e.alice = user("alice")
	e.aliceID = aliceID
	_, e.bob = user("bob")
	disabledID, e.disabled = user("carol")
	ro, err := srv.Cmds.IssueAPIKey.Handle(ctx, commands.IssueAPIKey{UserID: aliceID, ReadOnly: true})
	require.NoError(t, err)
	require.NoError(t, srv.Waiter.Wait(ctx, ro.LastEventID))
	e.aliceRO = ro.APIKey
	off, err := srv.Cmds.SetRewardModelsEnabled.Handle(ctx, commands.SetRewardModelsEnabled{UserID: disabledID})
	require.NoError(t, err)
	require.NoError(t, srv.Waiter.Wait(ctx, off.LastEventID))
	return e
}

func (e *env) client() criticv1connect.TraceServiceClient {
	return criticv1connect.NewTraceServiceClient(http.DefaultClient, e.url)
}

func withKey[T any](key string, msg *T) *connect.Request[T] {
	req := connect.NewRequest(msg)
	if key != "" {
		req.Header().Set("Authorization", "Bearer "+key)
	}
	return req
}

func requireCode(t *testing.T, err error, code connect.Code) *connect.Error {
	t.Helper()
	require.Error(t, err)
	var ce *connect.Error
	require.True(t, errors.As(err, &ce), "not a connect error: %v", err)
	require.Equal(t, code, ce.Code(), "error: %v", err)
	return ce
}

func TestTraceService(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := e.client()

	// Import through the generated Connect client; the answer comes once the
	// traces are readable (read-your-writes).
	imp, err := c.ImportTraces(ctx, withKey(e.alice, &criticv1.ImportTracesRequest{Format: "stash", Data: twoTraces, SourceId: new("ci")}))
	require.NoError(t, err)
	require.Equal(t, "stash", imp.Msg.Format)
	require.EqualValues(t, 2, imp.Msg.Imported)
	require.Len(t, imp.Msg.TraceIds, 2)
	require.EqualValues(t, 0, imp.Msg.Unchanged)
	refundID, shippingID := imp.Msg.TraceIds[0], imp.Msg.TraceIds[1]

	// The same payload again is unchanged, and says so through Connect too.
	same, err := c.ImportTraces(ctx, withKey(e.alice, &criticv1.ImportTracesRequest{Format: "stash", Data: twoTraces, SourceId: new("ci")}))
	require.NoError(t, err)
	require.Equal(t, []string{refundID, shippingID}, same.Msg.TraceIds)
	require.EqualValues(t, 2, same.Msg.Unchanged)
	require.EqualValues(t, 0, same.Msg.AnnotationsRemoved)

	list, err := c.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{}))
	require.NoError(t, err)
	require.EqualValues(t, 2, list.Msg.Total)
	require.Len(t, list.Msg.Traces, 2)
	byID := map[string]*criticv1.TraceSummary{}
	for _, s := range list.Msg.Traces {
		byID[s.Id] = s
	}
	require.Equal(t, "Refund for order 1", byID[refundID].Title)
	require.Equal(t, "refund-1", byID[refundID].GetExternalId())
	require.Equal(t, "ci", byID[refundID].SourceId)
	require.Equal(t, "stash", byID[refundID].SourceFormat)
	require.EqualValues(t, 4, byID[refundID].StepCount)
	require.Nil(t, byID[refundID].LatestScore)
	require.WithinDuration(t, time.Now(), byID[refundID].CreatedAt.AsTime(), time.Minute)

	// REST's filter rules: paging and source filter.
	page, err := c.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{Limit: proto.Int32(1), Offset: proto.Int32(1)}))
	require.NoError(t, err)
	require.EqualValues(t, 2, page.Msg.Total)
	require.Len(t, page.Msg.Traces, 1)
	none, err := c.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{SourceId: new("elsewhere")}))
	require.NoError(t, err)
	require.Zero(t, none.Msg.Total)
	require.Empty(t, none.Msg.Traces)
	_, err = c.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{Limit: proto.Int32(5000)}))
	ce := requireCode(t, err, connect.CodeInvalidArgument)
	require.Contains(t, ce.Message(), "limit must be an integer from 1 to 1000")
	_, err = c.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{Tz: new("Mars/Olympus")}))
	requireCode(t, err, connect.CodeInvalidArgument)
	// The list's scores and their sort and filters, as REST has them:
	// nothing is scored or labeled here, so every trace is unscored.
	scored, err := c.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{Sort: new("-action_credit")}))
	require.NoError(t, err)
	require.EqualValues(t, 2, scored.Msg.Total)
	for _, s := range scored.Msg.Traces {
		require.Nil(t, s.ActionCredit)
		require.Zero(t, s.ScoredActions)
		require.Nil(t, s.TraceScore)
		require.Nil(t, s.Outcome)
	}
	failures, err := c.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{Outcome: []string{"failure"}, ActionCreditMax: proto.Float64(0)}))
	require.NoError(t, err)
	require.Zero(t, failures.Msg.Total)
	_, err = c.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{Outcome: []string{"great"}}))
	require.Contains(t, requireCode(t, err, connect.CodeInvalidArgument).Message(), "outcome must be one of")
	_, err = c.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{Sort: new("credit")}))
	require.Contains(t, requireCode(t, err, connect.CodeInvalidArgument).Message(), "sort must be one of")

	got, err := c.GetTrace(ctx, withKey(e.alice, &criticv1.GetTraceRequest{TraceId: refundID}))
	require.NoError(t, err)
	tr := got.Msg.Trace
	require.Equal(t, refundID, tr.Summary.Id)
	require.Equal(t, "support-bot", tr.Metadata.Fields["agent"].GetStringValue())
	require.Len(t, tr.Steps, 4)
	require.Equal(t, "user", tr.Steps[0].Role)
	require.Nil(t, tr.Steps[0].ToolName)
	require.Nil(t, tr.Steps[0].ToolInput)
	call := tr.Steps[1]
	require.EqualValues(t, 1, call.Index)
	require.Equal(t, "lookup_order", call.GetToolName())
	require.Equal(t, "call_1", call.GetToolCallId())
	require.Equal(t, map[string]any{"order_id": "1", "full": true}, call.ToolInput.AsMap())
	require.Empty(t, tr.Annotations)

	// Export streams one JSONL line per trace, oldest first, and the lines
	// re-import as the same traces.
	stream, err := c.ExportTraces(ctx, withKey(e.aliceRO, &criticv1.ExportTracesRequest{}))
	require.NoError(t, err)
	var lines []string
	for stream.Receive() {
		lines = append(lines, stream.Msg().Line)
	}
	require.NoError(t, stream.Err())
	require.Len(t, lines, 2)
	require.Contains(t, lines[0]+lines[1], `"id":"refund-1"`)
	again, err := c.ImportTraces(ctx, withKey(e.alice, &criticv1.ImportTracesRequest{Format: "stash", Data: strings.Join(lines, "\n") + "\n"}))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{refundID, shippingID}, again.Msg.TraceIds)

	// The same list through a plain gRPC client over h2c on the same port.
	t.Run("grpc client sees the same list", func(t *testing.T) {
		conn, err := grpc.NewClient(e.srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer conn.Close()
		gctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+e.alice)
		out := &criticv1.ListTracesResponse{}
		require.NoError(t, conn.Invoke(gctx, criticv1connect.TraceServiceListTracesProcedure, &criticv1.ListTracesRequest{}, out))
		fresh, err := c.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{}))
		require.NoError(t, err)
		require.True(t, proto.Equal(fresh.Msg, out), "gRPC %v\nConnect %v", out, fresh.Msg)
		require.EqualValues(t, 2, out.Total)

		err = conn.Invoke(ctx, criticv1connect.TraceServiceListTracesProcedure, &criticv1.ListTracesRequest{}, out)
		require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
	})

	t.Run("errors", func(t *testing.T) {
		_, err := c.ImportTraces(ctx, withKey(e.aliceRO, &criticv1.ImportTracesRequest{Format: "stash", Data: twoTraces}))
		requireCode(t, err, connect.CodePermissionDenied)
		_, err = c.DeleteTrace(ctx, withKey(e.aliceRO, &criticv1.DeleteTraceRequest{TraceId: refundID}))
		requireCode(t, err, connect.CodePermissionDenied)

		_, err = c.ListTraces(ctx, withKey("", &criticv1.ListTracesRequest{}))
		requireCode(t, err, connect.CodeUnauthenticated)
		_, err = c.ListTraces(ctx, withKey("critic_not-a-key", &criticv1.ListTracesRequest{}))
		requireCode(t, err, connect.CodeUnauthenticated)
		stream, err := c.ExportTraces(ctx, withKey("", &criticv1.ExportTracesRequest{}))
		require.NoError(t, err)
		require.False(t, stream.Receive())
		requireCode(t, stream.Err(), connect.CodeUnauthenticated)

		// Another owner's trace does not exist for bob, and bob's list is empty.
		_, err = c.GetTrace(ctx, withKey(e.bob, &criticv1.GetTraceRequest{TraceId: refundID}))
		requireCode(t, err, connect.CodeNotFound)
		_, err = c.DeleteTrace(ctx, withKey(e.bob, &criticv1.DeleteTraceRequest{TraceId: refundID}))
		requireCode(t, err, connect.CodeNotFound)
		bobs, err := c.ListTraces(ctx, withKey(e.bob, &criticv1.ListTracesRequest{}))
		require.NoError(t, err)
		require.Zero(t, bobs.Msg.Total)
		_, err = c.GetTrace(ctx, withKey(e.alice, &criticv1.GetTraceRequest{TraceId: "not-a-uuid"}))
		requireCode(t, err, connect.CodeNotFound)

		// Reward models disabled: every call is not found.
		_, err = c.ListFormats(ctx, withKey(e.disabled, &criticv1.ListFormatsRequest{}))
		requireCode(t, err, connect.CodeNotFound)

		// An invalid trace names its line and field, in the message and as
		// an ErrorInfo detail; nothing of the payload is stored.
		bad := `{"id":"ok-1","steps":[{"role":"user","content":"hi"}]}` + "\n" +
			`{"id":"bad-2","steps":[{"role":"user","content":"hi"},{"role":"robot","content":"beep"}]}` + "\n"
		_, err = c.ImportTraces(ctx, withKey(e.bob, &criticv1.ImportTracesRequest{Format: "stash", Data: bad}))
		ce := requireCode(t, err, connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "line 2")
		require.Contains(t, ce.Message(), "steps[1].role")
		require.Len(t, ce.Details(), 1)
		v, err := ce.Details()[0].Value()
		require.NoError(t, err)
		info, ok := v.(*criticv1.ErrorDetail)
		require.True(t, ok, "detail is %T", v)
		require.Equal(t, "invalid_trace", info.Code)
		require.EqualValues(t, 2, info.Line)
		require.Equal(t, "steps[1].role", info.Field)
		bobs, err = c.ListTraces(ctx, withKey(e.bob, &criticv1.ListTracesRequest{}))
		require.NoError(t, err)
		require.Zero(t, bobs.Msg.Total)

		_, err = c.ImportTraces(ctx, withKey(e.alice, &criticv1.ImportTracesRequest{Data: twoTraces}))
		ce = requireCode(t, err, connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "format is required")
		_, err = c.ImportTraces(ctx, withKey(e.alice, &criticv1.ImportTracesRequest{Format: "stash", Data: twoTraces, SourceId: new("")}))
		requireCode(t, err, connect.CodeInvalidArgument)

		// Over the configured size (1 MiB here) is refused before decoding.
		_, err = c.ImportTraces(ctx, withKey(e.alice, &criticv1.ImportTracesRequest{Format: "stash", Data: strings.Repeat("x", 2<<20)}))
		requireCode(t, err, connect.CodeResourceExhausted)
	})

	// Delete answers once the trace is gone from the read model.
	_, err = c.DeleteTrace(ctx, withKey(e.alice, &criticv1.DeleteTraceRequest{TraceId: refundID}))
	require.NoError(t, err)
	_, err = c.GetTrace(ctx, withKey(e.alice, &criticv1.GetTraceRequest{TraceId: refundID}))
	requireCode(t, err, connect.CodeNotFound)
	left, err := c.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{}))
	require.NoError(t, err)
	require.EqualValues(t, 1, left.Msg.Total)
	require.Equal(t, shippingID, left.Msg.Traces[0].Id)

	formats, err := c.ListFormats(ctx, withKey(e.aliceRO, &criticv1.ListFormatsRequest{}))
	require.NoError(t, err)
	require.NotEmpty(t, formats.Msg.Formats)
	require.Equal(t, "auto", formats.Msg.Formats[len(formats.Msg.Formats)-1].Name)

	t.Run("JSON encoding reads like REST", func(t *testing.T) {
		post := func(body string) (int, string) {
			req, err := http.NewRequest(http.MethodPost, e.url+criticv1connect.TraceServiceListTracesProcedure, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+e.alice)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			return res.StatusCode, string(b)
		}
		code, body := post(`{"source_id":"ci"}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"source_format":"stash"`)
		require.Contains(t, body, `"latest_score":null`)
		code, body = post(`{"sourceid":"ci"}`)
		require.Equal(t, http.StatusBadRequest, code, body)
		require.Contains(t, body, "invalid_argument")
		require.Contains(t, body, "sourceid")
	})
}
