package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServesAppAndDescribesAPI: the binary serves the web app (or the page
// saying how to build it) at / and client routes, never for /api/…; the
// OpenAPI document needs no key; GET /me tells a key's account and whether
// it may write.
func TestServesAppAndDescribesAPI(t *testing.T) {
	t.Parallel()
	in := startServe(t)
	key := in.newUser("meuser", false)
	out, err := in.cli("users", "issue-key", "--name", "meuser", "--read-only-key")
	require.NoError(t, err, out)
	ro := keyRe.FindStringSubmatch(out)[1]

	for _, k := range []struct {
		key      string
		readOnly bool
	}{{key, false}, {ro, true}} {
		r := in.do("GET", "/api/v1/rm/me", k.key, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		me := r.JSON(t)
		require.Equal(t, "meuser", me["name"])
		require.Equal(t, k.readOnly, me["read_only"])
		require.NotEmpty(t, me["user_id"])
	}
	require.Equal(t, http.StatusUnauthorized, in.do("GET", "/api/v1/rm/me", "", nil).Status)

	r := in.do("GET", "/api/v1/rm/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.Status)
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.Contains(t, doc.Paths, "/api/v1/rm/traces/{trace_id}")

	for _, p := range []string{"/", "/traces", "/traces/0190d7a2-0000-7000-8000-000000000000?step=4", "/review"} {
		resp, err := http.Get(in.url + p)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
		require.Contains(t, resp.Header.Get("Content-Type"), "text/html", p)
		// The built app's shell, or the page that says to build it.
		require.True(t, strings.Contains(string(body), `<div id="root">`) || strings.Contains(string(body), "make web"), p)
	}
	for _, p := range []string{"/api/v1/nothing", "/api/v1/rm/nothing"} {
		r := in.do("GET", p, key, nil)
		require.Equal(t, http.StatusNotFound, r.Status, p)
		require.Equal(t, "not_found", r.JSON(t)["code"], p)
	}
	require.Equal(t, http.StatusOK, in.do("GET", "/healthz", "", nil).Status)
}
