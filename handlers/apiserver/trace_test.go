package apiserver_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/handlers/apiserver"
	"github.com/criticml/critic/platform/metrics/metricstest"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func (e *opsEnv) correlationIDs(t *testing.T, eventType string) []string {
	rows, err := e.pool.Query(context.Background(), `SELECT DISTINCT correlation_id FROM events WHERE type = $1 ORDER BY 1`, eventType)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	return out
}

// TestRequestIDFollowsTheRequest: an id sent in comes back in the response
// and in error bodies, is in the log line of the request, and is the
// correlation id of every event the request caused.
func TestRequestIDFollowsTheRequest(t *testing.T) {
	e := startOps(t, nil)

	r := e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": traceLine("rid-1") + "\n" + traceLine("rid-2")},
		"X-Request-Id", "ops-req-1")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, "ops-req-1", r.header.Get("X-Request-Id"))
	var imported struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(r.body, &imported))
	require.Len(t, imported.TraceIDs, 2)
	require.Equal(t, []string{"ops-req-1"}, e.correlationIDs(t, "trace.imported.v1"))
	var causes int
	require.NoError(t, e.pool.QueryRow(context.Background(),
		`SELECT count(DISTINCT causation_id) FROM events WHERE correlation_id = 'ops-req-1' AND causation_id <> ''`).Scan(&causes))
	require.Equal(t, 1, causes, "one command, one causation id")
	require.Regexp(t, `level=DEBUG msg="http request" method=POST route="POST /api/v1/rm/traces/import" status=200 elapsed=\S+ request_id=ops-req-1`, e.logs.String())

	// Error bodies name the id.
	bad := e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": "{broken"}, "X-Request-Id", "ops-req-2")
	require.Equal(t, http.StatusUnprocessableEntity, bad.status)
	var body map[string]any
	require.NoError(t, json.Unmarshal(bad.body, &body))
	require.Equal(t, "ops-req-2", body["request_id"])
	require.Equal(t, "ops-req-2", bad.header.Get("X-Request-Id"))
	require.NotEmpty(t, body["detail"])

	// A W3C traceparent wins: the id is its trace id.
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r = e.do(t, "POST", "/api/v1/rm/traces/"+imported.TraceIDs[0]+"/annotations", map[string]any{"rating": 1},
		"traceparent", tp, "X-Request-Id", "ignored-when-traceparent")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", r.header.Get("X-Request-Id"))
	require.Equal(t, []string{"4bf92f3577b34da6a3ce929d0e0e4736"}, e.correlationIDs(t, "annotation.added.v1"))

	// No id, or one that could forge log lines: a fresh trace-id-shaped one.
	for _, hdr := range []string{"", "has space", `quote"d`, strings.Repeat("a", 200)} {
		var r reply
		if hdr == "" {
			r = e.do(t, "GET", "/api/v1/rm/traces", nil)
		} else {
			r = e.do(t, "GET", "/api/v1/rm/traces", nil, "X-Request-Id", hdr)
		}
		require.Equal(t, http.StatusOK, r.status)
		require.Regexp(t, hex32, r.header.Get("X-Request-Id"), "header %q", hdr)
	}

	// Connect answers carry it too.
	c := criticv1connect.NewTraceServiceClient(http.DefaultClient, e.url)
	req := connect.NewRequest(&criticv1.ListFormatsRequest{})
	req.Header().Set("Authorization", "Bearer "+e.key)
	req.Header().Set("X-Request-Id", "ops-connect-1")
	res, err := c.ListFormats(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "ops-connect-1", res.Header().Get("X-Request-Id"))

	// Connect calls are counted by procedure; junk under a service's prefix
	// is not.
	resp, err := http.Post(e.url+"/critic.v1.TraceService/NoSuchMethod", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	fams := metricstest.Scrape(t, e.url+"/metrics")
	require.Equal(t, float64(1), fams.Value("critic_http_requests_total", "route=/critic.v1.TraceService/ListFormats", "code=200"))
	require.Equal(t, float64(1), fams.Value("critic_http_requests_total", "route=/critic.v1.TraceService/", "code=404"))
}

// TestGRPCHealthAndReflection talks to the Connect port with grpc-go, as
// grpcurl and Kubernetes gRPC probes do.
func TestGRPCHealthAndReflection(t *testing.T) {
	e := startOps(t, func(c *apiserver.Config) { c.ReadyMaxLag = 3 })
	conn, err := grpc.NewClient(e.srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	want := []string{"critic.v1.AnnotationService", "critic.v1.BaseModelService", "critic.v1.CriteriaService", "critic.v1.EvaluatorService", "critic.v1.GepaService", "critic.v1.QueryService", "critic.v1.RewardModelService",
		"critic.v1.TeamService", "critic.v1.TraceService", "grpc.health.v1.Health"}
	stream, err := reflectionv1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectionv1.ServerReflectionRequest{
		MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{ListServices: ""}}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	require.ElementsMatch(t, want, names)
	// A client can fetch the descriptors to build requests.
	require.NoError(t, stream.Send(&reflectionv1.ServerReflectionRequest{
		MessageRequest: &reflectionv1.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "critic.v1.TraceService"}}))
	resp, err = stream.Recv()
	require.NoError(t, err)
	require.NotEmpty(t, resp.GetFileDescriptorResponse().GetFileDescriptorProto())
	require.NoError(t, stream.CloseSend())

	// The older v1alpha protocol (what many grpcurl builds use) lists the same.
	alpha, err := reflectionv1alpha.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	require.NoError(t, err)
	require.NoError(t, alpha.Send(&reflectionv1alpha.ServerReflectionRequest{
		MessageRequest: &reflectionv1alpha.ServerReflectionRequest_ListServices{ListServices: ""}}))
	aresp, err := alpha.Recv()
	require.NoError(t, err)
	require.Len(t, aresp.GetListServicesResponse().GetService(), len(want))
	require.NoError(t, alpha.CloseSend())

	// A new account is several events (the user, its admin member, its
	// key): the query snapshot may trail the read model for a moment.
	require.Eventually(t, func() bool { return e.srv.Ready(ctx) == nil }, 20*time.Second, 50*time.Millisecond, "the instance becomes ready")
	health := healthpb.NewHealthClient(conn)
	for _, svc := range []string{"", "critic.v1.TraceService"} {
		hr, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		require.NoError(t, err, svc)
		require.Equal(t, healthpb.HealthCheckResponse_SERVING, hr.GetStatus(), svc)
	}
	_, err = health.Check(ctx, &healthpb.HealthCheckRequest{Service: "no.such.Service"})
	require.Equal(t, codes.NotFound, status.Code(err))

	// While the read model lags, health says NOT_SERVING (as /readyz does).
	pconn, err := e.pool.Acquire(ctx)
	require.NoError(t, err)
	defer pconn.Release()
	_, err = pconn.Exec(ctx, "SELECT pg_advisory_lock(7210010)")
	require.NoError(t, err)
	for i := range 5 {
		_, err := e.srv.Cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: fmt.Sprintf("health-%d", i)})
		require.NoError(t, err)
	}
	hr, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: ""})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, hr.GetStatus())
	_, err = pconn.Exec(ctx, "SELECT pg_advisory_unlock(7210010)")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		hr, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: ""})
		return err == nil && hr.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}, 30*time.Second, 50*time.Millisecond)
}

// collector is a loopback OTLP/HTTP trace receiver: what an OpenTelemetry
// Collector would get from Critic.
type collector struct {
	mu    sync.Mutex
	spans []ptrace.Span
	srv   *httptest.Server
}

func startCollector(t *testing.T) *collector {
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "unexpected "+r.URL.Path+" "+r.Header.Get("Content-Type"), http.StatusBadRequest)
			return
		}
		var rd io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			rd = gz
		}
		raw, err := io.ReadAll(rd)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rss := req.Traces().ResourceSpans()
		c.mu.Lock()
		for i := 0; i < rss.Len(); i++ {
			svc, _ := rss.At(i).Resource().Attributes().Get("service.name")
			if svc.Str() != "critic-api-test" {
				c.mu.Unlock()
				http.Error(w, "wrong service.name "+svc.Str(), http.StatusBadRequest)
				return
			}
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				ss := sss.At(j).Spans()
				for k := 0; k < ss.Len(); k++ {
					c.spans = append(c.spans, ss.At(k))
				}
			}
		}
		c.mu.Unlock()
		out, _ := ptraceotlp.NewExportResponse().MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) named(name string) []ptrace.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ptrace.Span
	for _, s := range c.spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func linksTo(s ptrace.Span, traceID string) bool {
	for i := 0; i < s.Links().Len(); i++ {
		if s.Links().At(i).TraceID().String() == traceID {
			return true
		}
	}
	return false
}

// TestSpansExportedOverOTLP sets OTEL_EXPORTER_OTLP_ENDPOINT to a loopback
// collector and follows one request: its server span continues the caller's
// trace, and the relay and projection batches that carried its events link
// back to that trace.
func TestSpansExportedOverOTLP(t *testing.T) {
	col := startCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.srv.URL)
	e := startOps(t, nil)
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	r := e.do(t, "POST", "/api/v1/rm/traces/import", map[string]any{"format": "stash", "data": traceLine("otel-1")},
		"traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Eventually(t, func() bool {
		q := e.do(t, "POST", "/api/v1/rm/query", map[string]any{"sql": "SELECT count(*) FROM traces"})
		return q.status == http.StatusOK && string(q.body) != "" && regexp.MustCompile(`\[1\]`).Match(q.body)
	}, 20*time.Second, 50*time.Millisecond)
	require.NoError(t, e.srv.Shutdown())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, e.tel.Shutdown(ctx)) // flushes

	server := col.named("POST /api/v1/rm/traces/import")
	require.Len(t, server, 1)
	s := server[0]
	require.Equal(t, traceID, s.TraceID().String(), "the server span continues the caller's trace")
	require.Equal(t, "b7ad6b7169203331", s.ParentSpanID().String())
	require.Equal(t, ptrace.SpanKindServer, s.Kind())
	code, _ := s.Attributes().Get("http.response.status_code")
	require.Equal(t, int64(200), code.Int())
	rid, _ := s.Attributes().Get("critic.request_id")
	require.Equal(t, traceID, rid.Str())

	for _, name := range []string{"relay publish", "projection readmodel", "projection snapshot"} {
		found := false
		for _, sp := range col.named(name) {
			found = found || linksTo(sp, traceID)
		}
		require.True(t, found, "no %q span links to the request's trace", name)
	}
}
