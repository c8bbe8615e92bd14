package telemetry_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/telemetry"
)

// TestCorrelationLinks: one link per distinct trace-shaped correlation id,
// ids of other shapes (client X-Request-Ids, old uuids) skipped, at most 32.
func TestCorrelationLinks(t *testing.T) {
	t.Parallel()
	evs := []events.Envelope{
		{CorrelationID: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{CorrelationID: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{CorrelationID: "my-request-1"},
		{CorrelationID: "0195c2a4-7d2e-7c1a-9b1e-5f3a2d1c0b9a"},
		{CorrelationID: "00000000000000000000000000000000"},
		{CorrelationID: ""},
		{CorrelationID: "0af7651916cd43dd8448eb211c80319c"},
	}
	links := telemetry.CorrelationLinks(evs)
	require.Len(t, links, 2)
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", links[0].SpanContext.TraceID().String())
	require.Equal(t, "0af7651916cd43dd8448eb211c80319c", links[1].SpanContext.TraceID().String())

	many := make([]events.Envelope, 100)
	for i := range many {
		many[i].CorrelationID = fmt.Sprintf("%032x", i+1)
	}
	require.Len(t, telemetry.CorrelationLinks(many), 32)
}

// TestOffRecordsNothing: without metrics and without an OTLP endpoint the
// observers are no-ops, and a nil Telemetry is safe to call.
func TestOffRecordsNothing(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tel, err := telemetry.New(context.Background(), telemetry.Options{Service: "x"}, nil)
	require.NoError(t, err)
	require.Nil(t, tel.Metrics)
	require.Nil(t, tel.Tracer())
	var none *telemetry.Telemetry
	for _, o := range []*telemetry.Telemetry{tel, none} {
		o.Published(context.Background(), time.Now(), []events.Envelope{{Seq: 1}}, nil)
		o.BatchApplied(context.Background(), "readmodel", time.Now(), nil, nil)
		ctx, end := o.JobStarted(context.Background(), "train", "")
		require.NotNil(t, ctx)
		end("succeeded", nil)
		o.TrainStep(10)
		o.Scored(1, time.Second)
		require.NoError(t, o.Shutdown(context.Background()))
	}
}
