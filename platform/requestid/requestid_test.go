package requestid_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/requestid"
)

func TestTraceID(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tp   string
		want string
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-future", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},   // all-zero trace id
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", ""},   // all-zero parent
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""},   // forbidden version
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", ""},   // upper case
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", ""}, // v00 has no extra fields
		{"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", ""},
		{"", ""},
	} {
		got, ok := requestid.TraceID(c.tp)
		require.Equal(t, c.want, got, c.tp)
		require.Equal(t, c.want != "", ok, c.tp)
	}
}

func TestFromRequest(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	require.Empty(t, requestid.FromRequest(h))
	h.Set("X-Request-Id", "abc-123.x:y_z")
	require.Equal(t, "abc-123.x:y_z", requestid.FromRequest(h))
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", requestid.FromRequest(h), "traceparent wins")
	h.Set("traceparent", "garbage")
	require.Equal(t, "abc-123.x:y_z", requestid.FromRequest(h), "a broken traceparent falls back")
	for _, bad := range []string{"two words", `a"b`, "a\tb", "é", strings.Repeat("a", requestid.MaxLen+1)} {
		require.False(t, requestid.Valid(bad), bad)
	}
	require.True(t, requestid.Valid(strings.Repeat("a", requestid.MaxLen)))
	require.Regexp(t, `^[0-9a-f]{32}$`, requestid.New())
	require.NotEqual(t, requestid.New(), requestid.New())
}

func TestLogHandlerAddsTheID(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(requestid.NewLogHandler(slog.NewTextHandler(&buf, nil))).With("component", "test")
	log.InfoContext(requestid.With(context.Background(), "req-9"), "with id")
	log.InfoContext(context.Background(), "without id")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	require.Contains(t, lines[0], "component=test request_id=req-9")
	require.NotContains(t, lines[1], "request_id")
}
