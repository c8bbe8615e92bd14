package events

import "encoding/json"

// OTelSpansReceived stores raw spans from the live OTLP receiver in the
// trace's own stream, so rebuilding a trace from all of its spans is a replay
// of that stream.
const OTelSpansReceived = "otel.spans_received.v1"

// RawSpanRecord is one span as received: a self-contained OTLP/JSON request
// holding only that span with its resource and scope.
type RawSpanRecord struct {
	SpanID string          `json:"span_id"`
	JSON   json.RawMessage `json:"json"`
}

// OTelSpansReceivedV1 carries the spans of one OTel trace from one request.
// A span id seen before overwrites the earlier copy (retries never duplicate).
type OTelSpansReceivedV1 struct {
	TraceID     string `json:"trace_id"`      // Critic trace id
	OTelTraceID string `json:"otel_trace_id"` // lowercase hex
	// Conversation is the external id of the conversation these spans
	// joined when the receiver filed a call (its own OTel trace) into a
	// conversation of several (formats.ThreadOf): the first call's trace id,
	// or "session:<id>". Empty when the stream is this OTel trace's own.
	Conversation string `json:"conversation,omitempty"`
	// FiledIn, in an OTel trace's own stream, says its records were filed
	// into the conversation keyed so ("session:<id>", "otel-opening:<hash>"),
	// and so are all of that trace's later records; such an event holds no
	// spans.
	FiledIn string          `json:"filed_in,omitempty"`
	Spans   []RawSpanRecord `json:"spans"`
}
