package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var pprofRe = regexp.MustCompile(`profiler \(unauthenticated, loopback only\) on (http://[^/\s]+)/debug/pprof/`)

// pprofURL is the profiler's base URL that `critic serve` printed.
func (in *instance) pprofURL(t testing.TB) string {
	t.Helper()
	m := pprofRe.FindStringSubmatch(in.logText())
	require.NotNil(t, m, "no profiler address in the server's output:\n%s", in.logText())
	return m[1]
}

// TestPProfNeverOnTheAPIPort: with the profiler on, the API port still
// answers /debug/pprof like any unknown route (with or without a key), and
// the profiler answers only on its own loopback listener.
func TestPProfNeverOnTheAPIPort(t *testing.T) {
	t.Parallel()
	in := startServe(t, "CRITIC_PPROF_ADDR=127.0.0.1:0")
	key := in.newUser("prof", false)
	// An unknown path outside /api is a client route of the web app, so the
	// API port may answer it with the app's page — never with a profile.
	notProfile := func(r response) {
		if r.Status == http.StatusOK {
			require.Contains(t, string(r.Body), "<title>Critic</title>", "a 200 on the API port must be the web app")
		}
		require.NotContains(t, string(r.Body), "goroutine")
	}
	for _, k := range []string{"", key} {
		notProfile(in.do("GET", "/debug/pprof/", k, nil))
		notProfile(in.do("GET", "/debug/pprof/cmdline", k, nil))
	}
	resp, err := http.Get(in.pprofURL(t) + "/debug/pprof/")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestPProfRefusesANonLoopbackAddress: a profiler address anyone could reach
// stops the server at start with a message naming the variable.
func TestPProfRefusesANonLoopbackAddress(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "localhost:6060", "10.1.2.3:6060"} {
		cmd := exec.Command(criticBin(t), "serve")
		cmd.Env = append(cmd.Environ(), "CRITIC_PPROF_ADDR="+addr, "DATABASE_URL=postgres://nobody@127.0.0.1:1/none")
		out, err := cmd.CombinedOutput()
		require.Error(t, err, addr)
		require.Contains(t, string(out), "CRITIC_PPROF_ADDR", addr)
		require.Contains(t, string(out), "loopback", addr)
	}
}

// startAnother starts a second `critic serve` on the same database as in,
// with its own data directory and embedded broker: another API instance of
// the same deployment (the relay's leader lock keeps one publisher).
func startAnother(t *testing.T, in *instance) *instance {
	t.Helper()
	other := &instance{t: t, bin: in.bin, dbURL: in.dbURL, dataDir: t.TempDir(), logs: &bytes.Buffer{}, pool: in.pool}
	other.env = append(os.Environ(),
		"DATABASE_URL="+in.dbURL, "CRITIC_DATA_DIR="+other.dataDir, "CRITIC_ADDR=127.0.0.1:0",
		"CRITIC_KAFKA_PORT=0", "KAFKA_BROKERS=", "CRITIC_INSTANCE_ID=second",
		// One deployment, one master key: a process with another key
		// refuses to start (keyring.Ring.CheckMaster).
		"CRITIC_MASTER_KEY_FILE="+masterKeyFileOf(in))
	other.start()
	return other
}

// masterKeyFileOf is the master key file in's process uses: the one its
// environment names, else its data dir's default.
func masterKeyFileOf(in *instance) string {
	for _, kv := range in.env {
		if v, ok := strings.CutPrefix(kv, "CRITIC_MASTER_KEY_FILE="); ok && v != "" {
			return v
		}
	}
	return filepath.Join(in.dataDir, "master_key")
}

// TestAPIKeysListAndRevoke: list-keys shows prefix, kind, created and last
// use but never a key; revoke-key by prefix makes the key a 401 on the very
// next request on every instance, while the account's other keys work.
func TestAPIKeysListAndRevoke(t *testing.T) {
	t.Parallel()
	in := startServe(t)
	second := startAnother(t, in)
	full := in.newUser("keyholder", false)
	out, err := in.cli("users", "issue-key", "--name", "keyholder", "--read-only-key")
	require.NoError(t, err, out)
	ro := keyRe.FindStringSubmatch(out)[1]
	in.newUser("bystander", false)

	for _, srv := range []*instance{in, second} {
		for _, k := range []string{full, ro} {
			require.Equal(t, http.StatusOK, srv.do("GET", "/api/v1/rm/traces", k, nil).Status)
		}
	}

	out, err = in.cli("users", "list-keys", "keyholder")
	require.NoError(t, err, out)
	t.Log("\n" + out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, "a header and two keys")
	require.Regexp(t, `^PREFIX\s+KIND\s+CREATED\s+LAST USED\s+STATUS$`, lines[0])
	require.Regexp(t, `^`+regexp.QuoteMeta(full[:15])+`\s+full-access\s+\d{4}-\d\d-\d\dT\S+Z\s+\d{4}-\d\d-\d\dT\S+Z\s+active$`, lines[1])
	require.Regexp(t, `^`+regexp.QuoteMeta(ro[:15])+`\s+read-only\s+\S+\s+\S+\s+active$`, lines[2])
	require.NotContains(t, out, full)
	require.NotContains(t, out, ro)
	require.NotContains(t, out, full[:16], "no more of the key than its prefix")

	// A prefix too short or naming nothing is refused; nothing is revoked.
	for _, bad := range []string{"critic_", "critic_zzzzzzzzzzz", "nope"} {
		out, err = in.cli("users", "revoke-key", bad)
		require.Error(t, err, out)
		require.Contains(t, out, "no API key matches")
	}
	require.Equal(t, http.StatusOK, in.do("GET", "/api/v1/rm/traces", full, nil).Status)

	out, err = in.cli("users", "revoke-key", full[:15])
	require.NoError(t, err, out)
	require.Contains(t, out, "revoked "+full[:15]+" of keyholder")
	for _, srv := range []*instance{in, second} {
		r := srv.do("GET", "/api/v1/rm/traces", full, nil)
		require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Body))
		require.Equal(t, http.StatusOK, srv.do("GET", "/api/v1/rm/traces", ro, nil).Status, "the other key still works")
	}
	out, err = in.cli("users", "revoke-key", full[:15])
	require.Error(t, err, out)
	require.Contains(t, out, "already revoked")

	out, err = in.cli("users", "list-keys", "keyholder")
	require.NoError(t, err, out)
	require.Regexp(t, regexp.QuoteMeta(full[:15])+`\s+full-access\s+\S+\s+\S+\s+revoked \d{4}-`, out)
	var revoked int
	require.NoError(t, in.pool.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE type = 'api_key.revoked.v1'`).Scan(&revoked))
	require.Equal(t, 1, revoked, "revoking twice appends one event")

	out, err = in.cli("users", "list-keys", "nobody-by-that-name")
	require.Error(t, err, out)
}

// awaitClose reads from conn until the server closes it (or answers and
// then closes), failing if the server keeps it open past limit — a bound on
// the test, not a performance assertion.
func awaitClose(t *testing.T, conn net.Conn, limit time.Duration) string {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(limit)))
	got, err := io.ReadAll(conn)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept a stalled connection open for %s; got %q", limit, got)
	return string(got)
}

// TestHTTPTimeoutsCutStalledClients: a client that never finishes its
// headers, one that stalls its body, and an idle keep-alive connection are
// all closed by the server.
func TestHTTPTimeoutsCutStalledClients(t *testing.T) {
	t.Parallel()
	in := startServe(t, "CRITIC_HTTP_READ_HEADER_TIMEOUT=1s", "CRITIC_HTTP_READ_TIMEOUT=2s", "CRITIC_HTTP_IDLE_TIMEOUT=1s")
	key := in.newUser("slowpoke", false)
	host := strings.TrimPrefix(in.url, "http://")

	// Headers never finished.
	conn, err := net.Dial("tcp", host)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n"))
	require.NoError(t, err)
	awaitClose(t, conn, 30*time.Second)

	// A body that stops arriving: the import is refused, nothing stored.
	before := in.eventCount()
	conn2, err := net.Dial("tcp", host)
	require.NoError(t, err)
	defer conn2.Close()
	_, err = fmt.Fprintf(conn2, "POST /api/v1/rm/traces/import HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"format\":\"stash\",\"data\":\"", key)
	require.NoError(t, err)
	got := awaitClose(t, conn2, 30*time.Second)
	if got != "" {
		require.NotContains(t, got, "200 OK")
	}
	require.Equal(t, before, in.eventCount())

	// An idle keep-alive connection after a complete request.
	conn3, err := net.Dial("tcp", host)
	require.NoError(t, err)
	defer conn3.Close()
	_, err = conn3.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	got = awaitClose(t, conn3, 30*time.Second)
	require.Contains(t, got, "200 OK", "the request itself was answered")

	require.Equal(t, http.StatusOK, in.do("GET", "/api/v1/rm/traces", key, nil).Status, "the server still serves")
}

// TestRawJSONLImport: a JSONL body posted as application/x-ndjson is parsed
// straight from the body (format and source in the query string), with the
// same answers and the same 413 limit as the JSON envelope.
func TestRawJSONLImport(t *testing.T) {
	t.Parallel()
	in := startServe(t, "CRITIC_MAX_BODY_BYTES=4096")
	key := in.newUser("rawjsonl", false)
	post := func(query, body string) response {
		req, err := http.NewRequest("POST", in.url+"/api/v1/rm/traces/import"+query, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return response{Status: resp.StatusCode, Body: raw}
	}
	data := `{"id":"r1","steps":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}` + "\n" +
		`{"id":"r2","steps":[{"role":"user","content":"q"}]}` + "\n"
	r := post("?format=stash&source_id=bulk", data)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	out := r.JSON(t)
	require.Equal(t, "stash", out["format"])
	require.EqualValues(t, 2, out["imported"])
	id := out["trace_ids"].([]any)[0].(string)
	tr := in.do("GET", "/api/v1/rm/traces/"+id, key, nil).JSON(t)
	require.Equal(t, "bulk", tr["source_id"])

	r = post("?format=stash", `{"id":"bad","steps":[{"role":"wizard","content":"x"}]}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Body))
	require.EqualValues(t, 1, r.JSON(t)["line"])
	r = post("", data)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status)
	require.Equal(t, "format", r.JSON(t)["field"])
	r = post("?format=stash&data=x", data)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status)
	require.Equal(t, "data", r.JSON(t)["field"])
	r = post("?format=stash", strings.Repeat(data, 100))
	require.Equal(t, http.StatusRequestEntityTooLarge, r.Status, string(r.Body))
	require.EqualValues(t, 2, in.do("GET", "/api/v1/rm/traces", key, nil).JSON(t)["total"], "nothing else stored")
}

// TestLargeAnswersGoOutGzipped: a trace's detail — every span's input, the
// conversation so far — and the web app's scripts go out gzipped to a
// client that accepts it, and read back exactly as the uncompressed answer;
// a client that does not ask gets them as they are.
func TestLargeAnswersGoOutGzipped(t *testing.T) {
	t.Parallel()
	in := startServe(t)
	key := in.newUser("gzip", false)
	var steps []string
	for i := range 200 {
		steps = append(steps, fmt.Sprintf(`{"role":"user","content":"question %d about order 5521"},{"role":"assistant","content":"answer %d: the refund is on its way"}`, i, i))
	}
	imp := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": "stash",
		"data": `{"id":"gz","title":"A long one","steps":[` + strings.Join(steps, ",") + `]}`})
	require.Equal(t, 200, imp.Status, string(imp.Body))
	var ids struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(imp.Body, &ids))

	get := func(path string, gz bool) (*http.Response, []byte) {
		req, err := http.NewRequest("GET", in.url+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		res, err := http.DefaultTransport.RoundTrip(req) // no transparent decompression
		require.NoError(t, err)
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, raw
	}
	plainRes, plain := get("/api/v1/rm/traces/"+ids.TraceIDs[0], false)
	require.Equal(t, 200, plainRes.StatusCode)
	require.Empty(t, plainRes.Header.Get("Content-Encoding"))
	gzRes, packed := get("/api/v1/rm/traces/"+ids.TraceIDs[0], true)
	require.Equal(t, 200, gzRes.StatusCode)
	require.Equal(t, "gzip", gzRes.Header.Get("Content-Encoding"))
	require.Less(t, len(packed), len(plain)/3)
	zr, err := gzip.NewReader(bytes.NewReader(packed))
	require.NoError(t, err)
	unpacked, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.JSONEq(t, string(plain), string(unpacked))

	_, page := get("/", false)
	script := regexp.MustCompile(`src="(/assets/[^"&]+\.js)"`).FindSubmatch(page)
	require.NotNil(t, script, "the page names its script")
	jsRes, _ := get(string(script[1]), true)
	require.Equal(t, 200, jsRes.StatusCode)
	require.Equal(t, "gzip", jsRes.Header.Get("Content-Encoding"))
}
