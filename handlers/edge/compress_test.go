package edge

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompressGzipsLargeTextAnswers: a large JSON answer goes out gzipped
// to a client that accepts it, and reads back the same; small answers,
// clients that do not accept gzip, other media types, Connect calls and
// answers the handler encoded itself go out as they are.
func TestCompressGzipsLargeTextAnswers(t *testing.T) {
	big := `{"spans":[` + strings.Repeat(`{"input":"the conversation so far"},`, 200) + `{}]}`
	serve := func(ct, body string, status int) http.Handler {
		return Compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			if status != 0 {
				w.WriteHeader(status)
			}
			// In pieces, as encoders write.
			for len(body) > 0 {
				n := min(len(body), 300)
				_, _ = io.WriteString(w, body[:n])
				body = body[n:]
			}
		}))
	}
	do := func(h http.Handler, accept string, header ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/api/v1/rm/traces/x", nil)
		if accept != "" {
			r.Header.Set("Accept-Encoding", accept)
		}
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	w := do(serve("application/json", big, 0), "gzip, deflate, br")
	require.Equal(t, 200, w.Code)
	require.Equal(t, "gzip", w.Header().Get("Content-Encoding"))
	require.Equal(t, "Accept-Encoding", w.Header().Get("Vary"))
	require.Less(t, w.Body.Len(), len(big)/5, "compressed")
	zr, err := gzip.NewReader(w.Body)
	require.NoError(t, err)
	got, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, big, string(got))

	w = do(serve("application/json", big, http.StatusCreated), "gzip")
	require.Equal(t, http.StatusCreated, w.Code, "the handler's status survives")
	require.Equal(t, "gzip", w.Header().Get("Content-Encoding"))

	brotli := Compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "br")
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, big)
	}))
	for _, c := range []struct {
		name string
		w    *httptest.ResponseRecorder
		body string
	}{
		{"small", do(serve("application/json", `{"ok":true}`, 0), "gzip"), `{"ok":true}`},
		{"not accepted", do(serve("application/json", big, 0), ""), big},
		{"refused by q=0", do(serve("application/json", big, 0), "gzip;q=0, identity"), big},
		{"a blob", do(serve("application/octet-stream", big, 0), "gzip"), big},
		{"a Connect call", do(serve("application/json", big, 0), "gzip", "Content-Type", "application/json", "Connect-Protocol-Version", "1"), big},
		{"a gRPC call", do(serve("application/grpc", big, 0), "gzip", "Content-Type", "application/grpc"), big},
		{"a 204", do(serve("application/json", "", http.StatusNoContent), "gzip"), ""},
		{"encoded by the handler", do(brotli, "gzip"), big},
	} {
		require.NotEqual(t, "gzip", c.w.Header().Get("Content-Encoding"), c.name)
		require.Equal(t, c.body, c.w.Body.String(), c.name)
	}
	require.Equal(t, http.StatusNoContent, do(serve("application/json", "", http.StatusNoContent), "gzip").Code)
}

// TestCompressStreamsOnFlush: a streamed answer is compressed from its
// first flush, and what was flushed reaches the client before the handler
// ends.
func TestCompressStreamsOnFlush(t *testing.T) {
	sent := make(chan struct{})
	srv := httptest.NewServer(Compress(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, `{"line":1}`+"\n")
		http.NewResponseController(w).Flush()
		<-sent
		_, _ = io.WriteString(w, `{"line":2}`+"\n")
	})))
	defer srv.Close()
	req, err := http.NewRequest("GET", srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := http.DefaultTransport.RoundTrip(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, "gzip", res.Header.Get("Content-Encoding"))
	zr, err := gzip.NewReader(res.Body)
	require.NoError(t, err)
	line := make([]byte, len(`{"line":1}`+"\n"))
	_, err = io.ReadFull(zr, line)
	require.NoError(t, err, "the first line arrives while the handler waits")
	require.Equal(t, `{"line":1}`+"\n", string(line))
	close(sent)
	rest, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, `{"line":2}`+"\n", string(rest))
	require.False(t, bytes.Contains(rest, []byte("line\":1")))
}
