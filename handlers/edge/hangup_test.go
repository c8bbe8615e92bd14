package edge_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/platform/logtest"
	"github.com/criticml/critic/platform/metrics"
	"github.com/criticml/critic/platform/metrics/metricstest"
)

// TestClientHangUpIsNoServerError: a client that hangs up mid-request (a
// worker stopping during a heartbeat — TestDistributed's SIGTERM of a worker
// logged `level=ERROR msg="internal error" err="context canceled"` and a
// 500) is routine: the handler's canceled-context error is logged at DEBUG,
// the request line and the metrics record 499, and nothing is at ERROR. A
// real internal error of a connected client stays a 500 at ERROR.
//
// Not parallel: it swaps the default logger, which WriteError logs to.
func TestClientHangUpIsNoServerError(t *testing.T) {
	var logs logtest.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prev := slog.Default()
	slog.SetDefault(logger)
	defer slog.SetDefault(prev)

	m := metrics.New()
	started := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /heartbeat", func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		edge.WriteError(w, fmt.Errorf("renew lease: %w", r.Context().Err()))
	})
	mux.HandleFunc("POST /boom", func(w http.ResponseWriter, r *http.Request) {
		edge.WriteError(w, fmt.Errorf("renew lease: %w", context.Canceled))
	})
	mux.Handle("GET /metrics", m.Handler())
	observed := edge.Observe(mux, edge.Observing{Metrics: m, Log: logger})
	finished := make(chan struct{}, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		observed.ServeHTTP(w, r)
		if r.URL.Path != "/metrics" {
			finished <- struct{}{}
		}
	}))
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/heartbeat", nil)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-started
	cancel()
	require.Error(t, <-errc, "the client hung up")
	<-finished

	// The same error with the client still there is a server error.
	resp, err := http.Post(srv.URL+"/boom", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	<-finished

	text := logs.String()
	var errorLines []string
	for line := range strings.SplitSeq(text, "\n") {
		if strings.Contains(line, "level=ERROR") {
			errorLines = append(errorLines, line)
		}
	}
	require.Len(t, errorLines, 1, "only the connected client's 500 is an error:\n%s", text)
	require.Contains(t, errorLines[0], `route="POST /boom" status=500`)
	require.Regexp(t, `level=DEBUG msg="http request" method=POST route="POST /heartbeat" status=499`, text)
	require.Regexp(t, `level=DEBUG msg="request canceled before it finished" err="renew lease: context canceled"`, text)

	f := metricstest.Scrape(t, srv.URL+"/metrics")
	require.Equal(t, float64(1), f.Value("critic_http_requests_total", "route=POST /heartbeat", "code=499"))
	require.False(t, f.Has("critic_http_requests_total", "route=POST /heartbeat", "code=500"))
	require.Equal(t, float64(1), f.Value("critic_http_requests_total", "route=POST /boom", "code=500"))
}
