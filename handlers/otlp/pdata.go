// Package otlp is the live OTLP/HTTP receiver. This file bridges requests
// decoded with pdata (which reads hex ids correctly, unlike protojson) to the
// pure `otel` adapter in domain/formats.
package otlp

import (
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/formats"
)

// SplitPData splits a request the receiver decoded (protobuf or JSON) into
// RawSpans to store per (trace id, span id).
func SplitPData(td ptrace.Traces) ([]formats.RawSpan, error) {
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		return nil, domain.Invalid("re-encoding spans: %v", err)
	}
	return formats.SplitSpans(b)
}

// SplitPLogs splits a decoded logs request into the GenAI log records to
// store per trace (see formats.SplitLogs).
func SplitPLogs(ld plog.Logs) (recs []formats.RawSpan, unjoinable, other int, err error) {
	b, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	if err != nil {
		return nil, 0, 0, domain.Invalid("re-encoding logs: %v", err)
	}
	return formats.SplitLogs(b)
}
