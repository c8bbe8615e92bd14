// Package requestid follows one request through Critic. Every API request
// gets an id — the trace id of an incoming W3C `traceparent`, else a sane
// `X-Request-Id`, else a fresh one shaped like a trace id — that the API
// returns in the `X-Request-Id` header and in error bodies, writes into every
// log line, and stores as the correlation id of the events the request
// caused. Projections and workers read it back from those events (and from job
// messages), so one id ties an HTTP call to the read-model batch that applied
// its events and the training job it started.
//
// It sits below commands and handlers (it imports only the standard library)
// so that the command layer can tag events without knowing about HTTP.
package requestid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
)

// Header is the response (and accepted request) header carrying the id.
const Header = "X-Request-Id"

// MetadataKey names the id in bus message metadata (a Kafka header), so a job
// command carries the correlation id of the events that caused it.
const MetadataKey = "correlation_id"

// MaxLen bounds an id accepted from a client; longer or odd ones are replaced.
const MaxLen = 128

type ctxKey struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, id)
}

// From returns the id ctx carries, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// New returns a fresh id: 32 lower-case hex digits, the shape of a W3C trace
// id, so a generated id can also name the request's trace.
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// FromRequest picks the id of an incoming request: the trace id of a valid
// `traceparent` (so Critic's ids match the caller's traces), else an
// `X-Request-Id` made of safe characters, else "" (the caller generates one).
func FromRequest(h http.Header) string {
	if id, ok := TraceID(h.Get("traceparent")); ok {
		return id
	}
	if id := h.Get(Header); Valid(id) {
		return id
	}
	return ""
}

// TraceID returns the trace id of a W3C traceparent header value
// (version-traceid-parentid-flags), refusing the all-zero id the spec forbids.
func TraceID(tp string) (string, bool) {
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' {
		return "", false
	}
	if !isHex(tp[0:2]) || tp[0:2] == "ff" || !isHex(tp[3:35]) || !isHex(tp[36:52]) || !isHex(tp[53:55]) {
		return "", false
	}
	if len(tp) > 55 && (tp[0:2] == "00" || tp[55] != '-') {
		return "", false
	}
	id := tp[3:35]
	if id == "00000000000000000000000000000000" || tp[36:52] == "0000000000000000" {
		return "", false
	}
	return id, true
}

// Valid reports whether a client-supplied id may be used as is: 1 to MaxLen
// characters of letters, digits and . _ : - (no spaces, quotes or control
// bytes that could forge log lines or headers).
func Valid(id string) bool {
	return id != "" && len(id) <= MaxLen &&
		strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-") == ""
}

// isHex reports whether s is lowercase hexadecimal digits only.
func isHex(s string) bool { return strings.Trim(s, "0123456789abcdef") == "" }

// LogHandler wraps a slog.Handler so every record logged with a context that
// carries an id gets a request_id attribute: one grep finds every line a
// request caused, in the API, the projections and the worker.
type LogHandler struct{ inner slog.Handler }

// NewLogHandler wraps inner.
func NewLogHandler(inner slog.Handler) *LogHandler { return &LogHandler{inner: inner} }

// Enabled defers to the wrapped handler.
func (h *LogHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// Handle adds request_id when ctx carries one.
func (h *LogHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := From(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.inner.Handle(ctx, r)
}

// WithAttrs keeps the wrapper around the derived handler.
func (h *LogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &LogHandler{inner: h.inner.WithAttrs(as)}
}

// WithGroup keeps the wrapper around the derived handler.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	return &LogHandler{inner: h.inner.WithGroup(name)}
}
