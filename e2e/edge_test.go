package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

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
	for _, k := range []string{"", key} {
		r := in.do("GET", "/debug/pprof/", k, nil)
		require.NotEqual(t, http.StatusOK, r.Status, string(r.Body))
		require.NotContains(t, string(r.Body), "goroutine")
		r = in.do("GET", "/debug/pprof/cmdline", k, nil)
		require.NotEqual(t, http.StatusOK, r.Status, string(r.Body))
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
		"CRITIC_KAFKA_PORT=0", "KAFKA_BROKERS=", "CRITIC_INSTANCE_ID=second")
	other.start()
	return other
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
