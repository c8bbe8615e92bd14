package edge_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

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
	body := make([]byte, 512)
	n, _ := resp.Body.Read(body)
	resp.Body.Close()
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.NotContains(t, string(body[:n]), "secret")
	require.Contains(t, string(body[:n]), `"request_id":"`+resp.Header.Get("X-Request-Id")+`"`)

	f := metricstest.Scrape(t, srv.URL+"/metrics")
	require.Equal(t, float64(3), f.Value("critic_http_requests_total", "route=GET /items/{id}", "code=418"))
	require.Equal(t, float64(1), f.Value("critic_http_requests_total", "route=GET /stream", "code=200"))
	require.Equal(t, float64(1), f.Value("critic_http_requests_total", "route=unmatched", "code=404"))
	require.Equal(t, float64(1), f.Value("critic_http_requests_total", "route=GET /boom", "code=500"))
	require.ElementsMatch(t, []string{"GET /items/{id}", "GET /stream", "unmatched", "GET /boom"},
		f.LabelValues("critic_http_requests_total", "route"))
	require.Equal(t, float64(1), f.Value("critic_http_requests_in_flight"), "the scrape itself is in flight")
}
