package edge_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/platform/metrics"
	"github.com/criticml/critic/platform/metrics/metricstest"
)

// TestObserveLabelsByPattern: series are keyed by the route pattern the mux
// matched, a streaming handler can still flush through the wrapper, and an
// internal error's body carries the request id but no detail.
func TestObserveLabelsByPattern(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("a"))
		if err := http.NewResponseController(w).Flush(); err != nil {
			panic("the wrapper hides Flush: " + err.Error())
		}
	})
	mux.HandleFunc("GET /boom", func(w http.ResponseWriter, r *http.Request) {
		edge.WriteError(w, errors.New("pq: secret SQL detail"))
	})
	mux.Handle("GET /metrics", m.Handler())
	srv := httptest.NewServer(edge.Observe(mux, edge.Observing{Metrics: m}))
	defer srv.Close()
	get := func(path string) *http.Response {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	for _, p := range []string{"/items/1", "/items/2", "/items/3", "/stream", "/nothing-here"} {
		get(p)
	}
	resp, err := http.Get(srv.URL + "/boom")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body) // one Read may return part of it
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.NotContains(t, string(body), "secret")
	require.Contains(t, string(body), `"request_id":"`+resp.Header.Get("X-Request-Id")+`"`)

	// A request is counted when its handler returns, which can be just after
	// the client read the answer: scrape until the last one is in.
	var f metricstest.Families
	require.Eventually(t, func() bool {
		f = metricstest.Scrape(t, srv.URL+"/metrics")
		return f.Value("critic_http_requests_total", "route=GET /boom", "code=500") == 1 &&
			f.Value("critic_http_requests_total", "route=unmatched", "code=404") == 1 &&
			f.Value("critic_http_requests_total", "route=GET /stream", "code=200") == 1 &&
			f.Value("critic_http_requests_total", "route=GET /items/{id}", "code=418") == 3
	}, 30*time.Second, 10*time.Millisecond)
	require.Equal(t, float64(3), f.Value("critic_http_requests_total", "route=GET /items/{id}", "code=418"))
	require.Equal(t, float64(1), f.Value("critic_http_requests_total", "route=GET /stream", "code=200"))
	require.Equal(t, float64(1), f.Value("critic_http_requests_total", "route=unmatched", "code=404"))
	require.Equal(t, float64(1), f.Value("critic_http_requests_total", "route=GET /boom", "code=500"))
	// An earlier scrape of the loop above is a request of its own, counted
	// under its route: every other route is one the test requested.
	var routes []string
	for _, r := range f.LabelValues("critic_http_requests_total", "route") {
		if r != "GET /metrics" {
			routes = append(routes, r)
		}
	}
	require.ElementsMatch(t, []string{"GET /items/{id}", "GET /stream", "unmatched", "GET /boom"}, routes)
	require.Equal(t, float64(1), f.Value("critic_http_requests_in_flight"), "the scrape itself is in flight")
}

// BenchmarkObserve prices the per-request cost of metrics: the middleware
// with metrics against the same middleware without (the reference, measured
// in the same run), around a handler that does nothing, so the difference is
// all instrumentation. An import request takes milliseconds; this is the
// bound on what metrics add to it.
func BenchmarkObserve(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/rm/traces/{trace_id}/annotations", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	req := httptest.NewRequest("POST", "/api/v1/rm/traces/0195c2a4-7d2e-7c1a-9b1e-5f3a2d1c0b9a/annotations", nil)
	run := func(b *testing.B, o edge.Observing) float64 {
		h := edge.Observe(mux, o)
		w := httptest.NewRecorder()
		b.ResetTimer()
		for range b.N {
			h.ServeHTTP(w, req)
		}
		return float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	}
	var off, on float64
	b.Run("metrics=off", func(b *testing.B) { off = run(b, edge.Observing{}) })
	b.Run("metrics=on", func(b *testing.B) { on = run(b, edge.Observing{Metrics: metrics.New()}) })
	fmt.Printf("observe: per request %.0f ns without metrics, %.0f ns with: metrics add %.0f ns (ratio on/off %.2f)\n", off, on, on-off, on/off)
}
