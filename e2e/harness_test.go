// Package e2e drives the built `critic` binary over HTTP like a user: real
// PostgreSQL, the embedded Kafka-protocol broker, no mocks.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/pg"
	"github.com/criticml/critic/platform/pg/pgtest"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// TestMain removes the binary criticBin built (137 MB a run: left behind,
// the runs of a working day filled a disk).
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// criticBin builds the binary once per test run.
func criticBin(t testing.TB) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "critic-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "critic")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/critic")
		cmd.Dir = pgtest.ModuleRoot(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

// instance is one running `critic serve` with its own database and data dir.
type instance struct {
	t       testing.TB
	bin     string
	env     []string
	url     string // http://host:port
	dbURL   string
	pool    *pgxpool.Pool
	cmd     *exec.Cmd
	logs    *bytes.Buffer
	logMu   sync.Mutex
	dataDir string
}

var listenRe = regexp.MustCompile(`listening on (http://\S+)`)

// startServe starts `critic serve` and waits until it answers.
func startServe(t testing.TB, extraEnv ...string) *instance {
	t.Helper()
	in := &instance{t: t, bin: criticBin(t), dbURL: pgtest.NewDatabase(t), dataDir: t.TempDir(), logs: &bytes.Buffer{}}
	in.env = append(os.Environ(),
		"DATABASE_URL="+in.dbURL, "CRITIC_DATA_DIR="+in.dataDir, "CRITIC_ADDR=127.0.0.1:0",
		"CRITIC_KAFKA_PORT=0", "KAFKA_BROKERS=",
		// Never a real provider: tests that need a model pass the test server.
		"ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "CRITIC_FEEDBACK_API_BASE=", "CRITIC_FAST_API_BASE=",
		// Step labeling only where a test turns it on with the test server.
		"CRITIC_STEP_LABEL_MODEL=off")
	in.env = append(in.env, extraEnv...)
	in.start()
	pool, err := pg.Connect(context.Background(), in.dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	in.pool = pool
	return in
}

func (in *instance) start() {
	t := in.t
	cmd := exec.Command(in.bin, "serve")
	cmd.Env = in.env
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = &lockedWriter{mu: &in.logMu, w: in.logs}
	require.NoError(t, cmd.Start())
	in.cmd = cmd
	urlCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			in.logMu.Lock()
			in.logs.WriteString(line + "\n")
			in.logMu.Unlock()
			if m := listenRe.FindStringSubmatch(line); m != nil {
				urlCh <- m[1]
			}
		}
	}()
	t.Cleanup(in.stop)
	select {
	case in.url = <-urlCh:
	case <-time.After(60 * time.Second):
		t.Fatalf("critic serve did not start:\n%s", in.logText())
	}
}

func (in *instance) stop() {
	if in.cmd == nil || in.cmd.Process == nil {
		return
	}
	_ = in.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = in.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = in.cmd.Process.Kill()
		<-done
	}
	in.cmd = nil
}

func (in *instance) logText() string {
	in.logMu.Lock()
	defer in.logMu.Unlock()
	return in.logs.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// cli runs a critic subcommand against the instance's database.
func (in *instance) cli(args ...string) (string, error) {
	cmd := exec.Command(in.bin, args...)
	cmd.Env = in.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var keyRe = regexp.MustCompile(`api key: (\S+)`)

// newUser creates an account through the CLI and returns its key.
func (in *instance) newUser(name string, readOnly bool) string {
	args := []string{"users", "create", "--name", name}
	if readOnly {
		args = append(args, "--read-only-key")
	}
	out, err := in.cli(args...)
	require.NoError(in.t, err, out)
	m := keyRe.FindStringSubmatch(out)
	require.NotNil(in.t, m, out)
	return m[1]
}

// response is what a client sees.
type response struct {
	Status int
	Body   []byte
}

func (r response) JSON(t testing.TB) map[string]any {
	var v map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &v), string(r.Body))
	return v
}

func (in *instance) do(method, path, key string, body any) response {
	in.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(in.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, in.url+path, rd)
	require.NoError(in.t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(in.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(in.t, err)
	return response{Status: resp.StatusCode, Body: raw}
}

func (in *instance) eventCount() int64 {
	var n int64
	require.NoError(in.t, in.pool.QueryRow(context.Background(), "SELECT count(*) FROM events").Scan(&n))
	return n
}

// importTraces posts an import and requires 200.
func (in *instance) importTraces(key, format, data string) []string {
	in.t.Helper()
	r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": format, "data": data})
	require.Equal(in.t, http.StatusOK, r.Status, string(r.Body))
	var out struct {
		Format   string   `json:"format"`
		Imported int      `json:"imported"`
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(in.t, json.Unmarshal(r.Body, &out))
	require.Equal(in.t, len(out.TraceIDs), out.Imported)
	return out.TraceIDs
}

// testNote prints a summary line a reader of the run must see (the browser
// suite's counts, what the chaos test survived). `go test ./...` shows a
// passing package's output only with -v, so the line also goes to the file
// CRITIC_TEST_NOTES names, which `make test` prints at the end.
func testNote(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	fmt.Println(line)
	if notes := os.Getenv("CRITIC_TEST_NOTES"); notes != "" {
		if f, err := os.OpenFile(notes, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}
