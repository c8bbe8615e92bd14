package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func get(t *testing.T, h http.Handler, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	return string(b)
}

// TestServesTheBuild: hashed assets are immutable, client routes get the
// app, /api/… never does, a missing chunk is a 404.
func TestServesTheBuild(t *testing.T) {
	t.Parallel()
	h := NewHandler(fstest.MapFS{
		"index.html":          {Data: []byte(`<div id="root"></div>`)},
		"assets/app-1a2b.js":  {Data: []byte(`console.log(1)`)},
		"favicon.svg":         {Data: []byte(`<svg/>`)},
		"assets/app-1a2b.css": {Data: []byte(`body{}`)},
	})
	r := get(t, h, "/assets/app-1a2b.js")
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Equal(t, "public, max-age=31536000, immutable", r.Header.Get("Cache-Control"))
	require.Contains(t, r.Header.Get("Content-Type"), "javascript")
	require.Equal(t, "console.log(1)", body(t, r))

	r = get(t, h, "/favicon.svg")
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Equal(t, "no-cache", r.Header.Get("Cache-Control"))

	for _, p := range []string{"/", "/traces", "/traces/6f1c0c4e-0000-4000-8000-000000000000?step=3", "/review"} {
		r = get(t, h, p)
		require.Equal(t, http.StatusOK, r.StatusCode, p)
		require.Equal(t, "no-cache", r.Header.Get("Cache-Control"), p)
		require.Contains(t, r.Header.Get("Content-Security-Policy"), "script-src 'self'", p)
		require.Equal(t, `<div id="root"></div>`, body(t, r), p)
	}

	for _, p := range []string{"/api", "/api/v1/me/nothing", "/api/v2/traces"} {
		r = get(t, h, p)
		require.Equal(t, http.StatusNotFound, r.StatusCode, p)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"), p)
		require.Contains(t, body(t, r), `"code":"not_found"`, p)
	}

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/traces", nil))
	require.Equal(t, http.StatusNotFound, rec.Code)

	r = get(t, h, "/assets/app-old.js")
	require.Equal(t, http.StatusNotFound, r.StatusCode)
	require.NotContains(t, body(t, r), "root")
}

// TestPlaceholderWithoutBuild: a binary built before `make web` says how to
// build the app on every page.
func TestPlaceholderWithoutBuild(t *testing.T) {
	t.Parallel()
	h := NewHandler(fstest.MapFS{".keep": {Data: []byte("x")}})
	for _, p := range []string{"/", "/traces/abc"} {
		r := get(t, h, p)
		require.Equal(t, http.StatusOK, r.StatusCode)
		require.True(t, strings.Contains(body(t, r), "make web"), p)
	}
}
