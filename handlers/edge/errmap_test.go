package edge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

// TestUnavailableAnswersNameTheirRetryDelay: a busy answer (query slots
// full, a contended trace) asks REST and Connect clients alike to come back
// after its delay.
func TestUnavailableAnswersNameTheirRetryDelay(t *testing.T) {
	busy := &domain.UnavailableError{Message: "every query slot is busy", Code: "query_capacity", RetryAfterSeconds: 2}

	rec := httptest.NewRecorder()
	WriteError(rec, busy)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "2", rec.Header().Get("Retry-After"))

	var ce *connect.Error
	require.True(t, errors.As(ConnectErrorContext(context.Background(), busy), &ce))
	require.Equal(t, connect.CodeUnavailable, ce.Code())
	require.Equal(t, "2", ce.Meta().Get("Retry-After"))

	require.True(t, errors.As(ConnectErrorContext(context.Background(), &domain.UnavailableError{Message: "behind"}), &ce))
	require.Empty(t, ce.Meta().Get("Retry-After"), "no delay named, none sent")
}
