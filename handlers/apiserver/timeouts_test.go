package apiserver

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWriteTimeoutIsOnProgress: a response that keeps writing streams past
// the write timeout (a long download or export), because every write moves
// the deadline; with a plain http.Server WriteTimeout the connection would
// be cut once the timeout elapsed since the request arrived.
func TestWriteTimeoutIsOnProgress(t *testing.T) {
	t.Parallel()
	const chunks = 8
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range chunks {
			if _, err := fmt.Fprintf(w, "chunk %d\n", i); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(250 * time.Millisecond) // 2 s in all, against a 1 s timeout
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	to := Timeouts{Write: time.Second}.withDefaults()
	srv := &http.Server{Handler: extendWrites(h, to.Write), WriteTimeout: to.Write, ReadHeaderTimeout: to.ReadHeader}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	n := 0
	for sc.Scan() {
		require.Equal(t, fmt.Sprintf("chunk %d", n), sc.Text())
		n++
	}
	require.NoError(t, sc.Err())
	require.Equal(t, chunks, n, "the whole response arrived")
}
