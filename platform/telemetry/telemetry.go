// Package telemetry ties Critic's signals together for one process: the
// Prometheus registry (package metrics) and, when OTEL_EXPORTER_OTLP_ENDPOINT
// (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, an OpenTelemetry tracer
// provider exporting Critic's own spans over OTLP/HTTP. Its Telemetry value
// is the observer the relay, the projections, the worker service and the
// worker are handed: one call per publish, batch or job feeds both the
// metrics and a span.
//
// Spans of the background loops cannot be children of the request that
// caused their events (an event carries a correlation id, not a span), so a
// relay or projection batch span links to the traces of the correlation ids
// in it; a generated request id is shaped like a trace id for exactly this.
package telemetry

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/metrics"
)

// maxLinks bounds the links of one batch span (a bulk import is one request;
// a batch of thousands of unrelated requests links the first ones).
const maxLinks = 32

// Telemetry is one process's metrics and tracer. The zero value and nil
// record nothing.
type Telemetry struct {
	// Metrics is nil when metrics are off (CRITIC_METRICS=off).
	Metrics *metrics.Metrics
	tp      trace.TracerProvider
	tracer  trace.Tracer
	sdk     *sdktrace.TracerProvider
}

// Options configure New.
type Options struct {
	// Service is the OpenTelemetry service.name (OTEL_SERVICE_NAME wins).
	Service string
	// Metrics off leaves Telemetry.Metrics nil.
	Metrics bool
	// Exporter overrides the OTLP exporter the environment configures (tests
	// pass their own; nil reads OTEL_EXPORTER_OTLP_*).
	Exporter sdktrace.SpanExporter
}

// TracingConfigured reports whether the environment asks for span export.
func TracingConfigured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New builds the process's telemetry: a Prometheus registry when o.Metrics,
// and an OTLP span exporter when the environment configures one (or
// o.Exporter is given).
func New(ctx context.Context, o Options, log *slog.Logger) (*Telemetry, error) {
	t := &Telemetry{}
	if o.Metrics {
		t.Metrics = metrics.New()
	}
	exp := o.Exporter
	if exp == nil && TracingConfigured() {
		var err error
		if exp, err = otlptracehttp.New(ctx); err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
		}
	}
	if exp == nil {
		t.tp = noop.NewTracerProvider()
		t.tracer = t.tp.Tracer("critic")
		return t, nil
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", o.Service)))
	if err != nil {
		return nil, err
	}
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	t.sdk = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t.tp = t.sdk
	t.tracer = t.sdk.Tracer("github.com/criticml/critic")
	if log != nil {
		log.Info("exporting spans over OTLP", "service", o.Service)
	}
	return t, nil
}

// Tracer is the process's tracer, or nil when no spans are exported (callers
// then skip span work entirely).
func (t *Telemetry) Tracer() trace.Tracer {
	if t == nil || t.sdk == nil {
		return nil
	}
	return t.tracer
}

// Shutdown flushes pending spans.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// Published is the relay's observer: one call per publish of evs.
func (t *Telemetry) Published(ctx context.Context, start time.Time, evs []events.Envelope, err error) {
	if t == nil || len(evs) == 0 {
		return
	}
	last := evs[len(evs)-1].Seq
	if t.Metrics != nil {
		t.Metrics.RelayPublished(len(evs), last, err)
	}
	t.batchSpan(ctx, "relay publish", start, evs, err, attribute.Int64("critic.seq.last", last))
}

// BatchApplied is a projection's observer: one call per batch.
func (t *Telemetry) BatchApplied(ctx context.Context, projection string, start time.Time, envs []events.Envelope, err error) {
	if t == nil {
		return
	}
	var maxSeq int64
	for _, e := range envs {
		maxSeq = max(maxSeq, e.Seq)
	}
	if t.Metrics != nil {
		t.Metrics.ProjectionBatch(projection, len(envs), maxSeq, time.Since(start), err)
	}
	t.batchSpan(ctx, "projection "+projection, start, envs, err, attribute.String("critic.projection", projection))
}

func (t *Telemetry) batchSpan(ctx context.Context, name string, start time.Time, evs []events.Envelope, err error, attrs ...attribute.KeyValue) {
	tr := t.Tracer()
	if tr == nil {
		return
	}
	_, span := tr.Start(ctx, name, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithLinks(CorrelationLinks(evs)...),
		trace.WithAttributes(append(attrs, attribute.Int("critic.events", len(evs)))...))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// JobSpan starts the span of one job on a worker, linked to the trace of the
// request that caused it (correlationID); end it with the returned func.
func (t *Telemetry) JobSpan(ctx context.Context, kind, correlationID string) (context.Context, func(outcome string, err error)) {
	tr := t.Tracer()
	if tr == nil {
		return ctx, func(string, error) {}
	}
	var links []trace.Link
	if l, ok := correlationLink(correlationID); ok {
		links = append(links, l)
	}
	ctx, span := tr.Start(ctx, "job "+kind, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...),
		trace.WithAttributes(attribute.String("critic.job.kind", kind), attribute.String("critic.correlation_id", correlationID)))
	return ctx, func(outcome string, err error) {
		span.SetAttributes(attribute.String("critic.job.outcome", outcome))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// CorrelationLinks links to the distinct traces named by the events'
// correlation ids (those shaped like trace ids), at most maxLinks.
func CorrelationLinks(evs []events.Envelope) []trace.Link {
	var links []trace.Link
	seen := map[string]bool{}
	for _, e := range evs {
		if len(links) == maxLinks {
			break
		}
		if seen[e.CorrelationID] {
			continue
		}
		seen[e.CorrelationID] = true
		if l, ok := correlationLink(e.CorrelationID); ok {
			links = append(links, l)
		}
	}
	return links
}

// correlationLink is a link to the trace a correlation id names. It carries
// no span id (the event does not record one); the attribute keeps it from
// being dropped and names the request.
func correlationLink(id string) (trace.Link, bool) {
	if len(id) != 32 {
		return trace.Link{}, false
	}
	var tid trace.TraceID
	if _, err := hex.Decode(tid[:], []byte(id)); err != nil || !tid.IsValid() {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid}),
		Attributes: []attribute.KeyValue{attribute.String("critic.request_id", id)}}, true
}

// JobStarted is the worker's observer for one job: a span (see JobSpan) and,
// when it ends, its duration by kind and outcome.
func (t *Telemetry) JobStarted(ctx context.Context, kind, correlationID string) (context.Context, func(outcome string, err error)) {
	if t == nil {
		return ctx, func(string, error) {}
	}
	start := time.Now()
	ctx, end := t.JobSpan(ctx, kind, correlationID)
	return ctx, func(outcome string, err error) {
		if t.Metrics != nil {
			t.Metrics.WorkerJobDone(kind, outcome, time.Since(start))
		}
		end(outcome, err)
	}
}

// TrainStep records one optimizer step's throughput.
func (t *Telemetry) TrainStep(tokensPerSec float64) {
	if t != nil && t.Metrics != nil {
		t.Metrics.WorkerTrainStep(tokensPerSec)
	}
}

// Scored records a finished scoring job.
func (t *Telemetry) Scored(n int, elapsed time.Duration) {
	if t != nil && t.Metrics != nil {
		t.Metrics.WorkerScored(n, elapsed)
	}
}
