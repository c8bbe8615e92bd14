package blobdl_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/handlers/blobdl"
	"github.com/criticml/critic/platform/blob"
)

// serve mounts the handler the way the API does: on a mux under Pattern,
// next to routes that need an API key.
func serve(t *testing.T) (*blob.Local, string) {
	t.Helper()
	l, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(blobdl.Pattern, blobdl.Handler(l))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "needs a key", http.StatusUnauthorized) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	require.NoError(t, l.SetPublicURL(srv.URL))
	return l, srv.URL
}

func do(t *testing.T, method, u string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

func TestDownloadHeaders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, _ := serve(t)
	require.NoError(t, l.Put(ctx, "checkpoints/m1/reward-model.tar.gz", []byte("gzip bytes")))
	u, err := l.SignedURL(ctx, "checkpoints/m1/reward-model.tar.gz", 5*time.Minute)
	require.NoError(t, err)

	res, body := do(t, http.MethodGet, u)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Equal(t, "gzip bytes", body)
	require.Equal(t, "application/gzip", res.Header.Get("Content-Type"))
	require.Equal(t, "10", res.Header.Get("Content-Length"))
	require.Equal(t, `attachment; filename=reward-model.tar.gz`, res.Header.Get("Content-Disposition"))
	require.Equal(t, "private, no-store", res.Header.Get("Cache-Control"))

	res, body = do(t, http.MethodHead, u)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Empty(t, body)
	require.Equal(t, "10", res.Header.Get("Content-Length"))

	// A non-ASCII base name survives the header encoding.
	require.NoError(t, l.Put(ctx, "exports/résumé model.bin", []byte("x")))
	u, err = l.SignedURL(ctx, "exports/résumé model.bin", time.Minute)
	require.NoError(t, err)
	res, _ = do(t, http.MethodGet, u)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "application/octet-stream", res.Header.Get("Content-Type"))
	require.Equal(t, `attachment; filename*=utf-8''r%C3%A9sum%C3%A9%20model.bin`, res.Header.Get("Content-Disposition"))
}

func TestForgedRequestsLearnNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, base := serve(t)
	require.NoError(t, l.Put(ctx, "a/w.bin", []byte("secret weights")))
	valid, err := l.SignedURL(ctx, "a/w.bin", time.Minute)
	require.NoError(t, err)
	q := mustQuery(t, valid)

	for name, u := range map[string]string{
		"no parameters":            base + "/blobs/a/w.bin",
		"no signature":             base + "/blobs/a/w.bin?expires=" + q.Get("expires"),
		"non-hex signature":        base + "/blobs/a/w.bin?expires=" + q.Get("expires") + "&sig=zz",
		"short signature":          base + "/blobs/a/w.bin?expires=" + q.Get("expires") + "&sig=" + q.Get("sig")[:32],
		"signature of another key": base + "/blobs/a/missing.bin?" + q.Encode(),
		"non-numeric expiry":       base + "/blobs/a/w.bin?expires=soon&sig=" + q.Get("sig"),
		"path traversal":           base + "/blobs/a/../../etc/passwd?" + q.Encode(),
	} {
		res, body := do(t, http.MethodGet, u)
		if name == "path traversal" { // the mux cleans ".." away: not our route at all
			require.NotEqual(t, http.StatusOK, res.StatusCode)
		} else {
			require.Equal(t, http.StatusForbidden, res.StatusCode, name)
			require.Contains(t, body, "bad_signature", name)
		}
		require.NotContains(t, body, "secret weights", name)
	}
}

func TestExpiredLinkSaysSo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, _ := serve(t)
	require.NoError(t, l.Put(ctx, "k", []byte("v")))
	u, err := l.SignedURL(ctx, "k", time.Second)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		res, body := do(t, http.MethodGet, u)
		return res.StatusCode == http.StatusForbidden && strings.Contains(body, "link_expired")
	}, 5*time.Second, 100*time.Millisecond)
}

func mustQuery(t *testing.T, s string) url.Values {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u.Query()
}
