package edge

import (
	"cmp"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/criticml/critic/platform/metrics"
	"github.com/criticml/critic/platform/requestid"
)

// Observing is what the outermost middleware records; every field is
// optional, so a test server can observe nothing.
type Observing struct {
	// Metrics counts requests by route pattern and status; nil records none.
	Metrics *metrics.Metrics
	// Tracer starts a server span per request (continuing an incoming
	// traceparent); nil starts none.
	Tracer trace.Tracer
	// Log receives one line per request: at debug level, or error level for
	// a 5xx; nil logs none.
	Log *slog.Logger
}

// StatusClientClosedRequest (nginx's 499) is what Observe records for a
// request whose client hung up before the answer: the 5xx its handler wrote
// (its context was canceled) reached nobody and says nothing about the
// server, so it must not count as an error in the 5xx ratio or the logs.
const StatusClientClosedRequest = 499

// unmatchedRoute labels requests no route matched, so scanners probing
// random paths cannot mint new series.
const unmatchedRoute = "unmatched"

// Observe wraps the whole mux. It gives every request its id (see package
// requestid) in the context and the X-Request-Id response header — set before
// the handler runs, so error bodies and Connect responses carry it too — and
// after the mux routed it, records the route pattern (never the path: ids in
// paths would make unbounded series; Connect calls by procedure), the status
// and the latency.
func Observe(next http.Handler, o Observing) http.Handler {
	prop := propagation.TraceContext{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := r.Context()
		id := requestid.FromRequest(r.Header)
		var span trace.Span
		if o.Tracer != nil {
			ctx = prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
			ctx, span = o.Tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", r.Method)))
			if id == "" && span.SpanContext().HasTraceID() {
				id = span.SpanContext().TraceID().String()
			}
		}
		if id == "" {
			id = requestid.New()
		}
		w.Header().Set(requestid.Header, id)
		ctx = requestid.With(ctx, id)
		var done func()
		if o.Metrics != nil {
			done = o.Metrics.HTTPStarted()
		}
		sw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(ctx)
		next.ServeHTTP(sw, r) // the mux sets r.Pattern on this request
		status := cmp.Or(sw.status, http.StatusOK)
		if status >= 500 && r.Context().Err() != nil {
			status = StatusClientClosedRequest
		}
		route := cmp.Or(rpcRoute(r.Pattern, r.URL.Path), unmatchedRoute)
		elapsed := time.Since(start)
		if o.Metrics != nil {
			done()
			o.Metrics.HTTPDone(route, status, elapsed)
		}
		if span != nil {
			span.SetName(route)
			span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", status),
				attribute.String("critic.request_id", id))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			span.End()
		}
		if o.Log != nil {
			level := slog.LevelDebug
			if status >= 500 {
				level = slog.LevelError
			}
			o.Log.LogAttrs(ctx, level, "http request", slog.String("method", r.Method), slog.String("route", route),
				slog.Int("status", status), slog.Duration("elapsed", elapsed))
		}
	})
}

// rpcRoute names a Connect/gRPC call by its procedure: a service is mounted
// as one prefix pattern ("/critic.v1.TraceService/"), which alone would lump
// every method together. The method is only appended when the service's
// descriptor has it, so junk paths under the prefix cannot mint series.
func rpcRoute(pattern, path string) string {
	if len(pattern) < 3 || pattern[0] != '/' || !strings.HasSuffix(pattern, "/") || !strings.HasPrefix(path, pattern) {
		return pattern
	}
	method := path[len(pattern):]
	if method == "" || strings.Contains(method, "/") {
		return pattern
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(strings.Trim(pattern, "/")))
	if err != nil {
		return pattern
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok || sd.Methods().ByName(protoreflect.Name(method)) == nil {
		return pattern
	}
	return path
}

// statusWriter remembers the status; Unwrap lets http.ResponseController
// (and Connect's streaming) reach the real writer's Flush and deadlines.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = cmp.Or(s.status, code)
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.status = cmp.Or(s.status, http.StatusOK)
	return s.ResponseWriter.Write(b)
}

// Flush forwards to the wrapped writer (streaming exports need it).
func (s *statusWriter) Flush() {
	s.status = cmp.Or(s.status, http.StatusOK)
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
