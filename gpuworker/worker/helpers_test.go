package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/train"
)

const (
	tinyTok   = "../testdata/tinytok"
	testToken = "worker-secret"
)

// writeTinyBase writes a tiny random Qwen3 base with the tiny tokenizer (what
// `critic model init` writes) and returns its directory.
func writeTinyBase(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "base")
	var out, errb bytes.Buffer
	require.NoError(t, train.CLI(context.Background(), []string{"init", "--arch", "qwen3", "--hidden", "32", "--layers", "1",
		"--heads", "4", "--kv-heads", "2", "--head-dim", "8", "--intermediate", "64", "--tokenizer", tinyTok, "--out", dir},
		nil, &out, &errb), errb.String())
	return dir
}

func strp(s string) *string { return &s }

// testDataset has trace pairs and action pairs over five traces (a usable split),
// score items for every trace and two action items.
func testDataset(modelID string) rewardmodels.Dataset {
	ds := rewardmodels.Dataset{ModelID: modelID, Attempt: 1}
	for i, tr := range []string{"t1", "t2", "t3", "t4", "t5"} {
		ds.Pairs = append(ds.Pairs,
			rewardmodels.DatasetPair{Chosen: "user: hi\nassistant: the answer is right " + tr, Rejected: "user: hi\nassistant: no " + tr,
				TraceIDs: []string{tr}, Granularity: "trace"},
			rewardmodels.DatasetPair{Chosen: "assistant: lookup(" + tr + ")", Rejected: "assistant: drop(" + tr + ")",
				TraceIDs: []string{tr}, Granularity: "step", ActionType: strp([]string{"tool_call", "response"}[i%2])})
		ds.ScoreItems = append(ds.ScoreItems, rewardmodels.ScoreItem{TraceID: tr, Revision: 1, Text: "user: hi\nassistant: ok " + tr})
	}
	ds.ActionScoreItems = []rewardmodels.ActionItem{
		{TraceID: "t1", StepID: "s1", Revision: 1, Text: "user: hi\nassistant: lookup(t1)"},
		{TraceID: "t1", StepID: "s2", Revision: 1, Text: "user: hi\nassistant: lookup(t1)\ntool: 1\nassistant: done"},
	}
	return ds
}

// testLogger writes to the test log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// request is one call the fake worker service received.
type request struct {
	Path string
	Body map[string]any
	Raw  []byte
}

// fakeAPI is the API's worker service as the contract describes it: a training
// attempt or scoring run can be claimed once (later claims answer 409), a lost
// lease answers heartbeats with 409, and every call needs the bearer token.
type fakeAPI struct {
	t   testing.TB
	srv *httptest.Server

	mu        sync.Mutex
	reqs      []request
	claims    map[string]bool // path prefix → claimed
	jobs      map[string]TrainingClaim
	scoring   map[string]string // run id → items key
	leaseLost bool
	notify    chan string // every path, as it arrives
}

func newFakeAPI(t testing.TB) *fakeAPI {
	f := &fakeAPI{t: t, claims: map[string]bool{}, jobs: map[string]TrainingClaim{}, scoring: map[string]string{},
		notify: make(chan string, 1000)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) client(workerID string) *Client {
	return NewClient(f.srv.URL, testToken, workerID)
}

func (f *fakeAPI) fail(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"detail": detail, "code": code})
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer "+testToken ||
		r.Header.Get("Content-Type") != "application/json" {
		f.fail(w, http.StatusUnauthorized, "unauthorized", "bad method, token or content type")
		return
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		f.fail(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, request{Path: r.URL.Path, Body: body, Raw: raw})
	f.mu.Unlock()
	defer func() { f.notify <- r.URL.Path }()

	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/worker/"), "/")
	if len(parts) != 3 {
		f.fail(w, http.StatusNotFound, "not_found", r.URL.Path)
		return
	}
	kind, id, verb := parts[0], parts[1], parts[2]
	f.mu.Lock()
	defer f.mu.Unlock()
	switch kind + "/" + verb {
	case "training/claim":
		job, ok := f.jobs[id]
		if !ok || f.claims[kind+id] {
			f.fail(w, http.StatusConflict, "not_claimable", "model "+id+" is not queued")
			return
		}
		f.claims[kind+id] = true
		json.NewEncoder(w).Encode(job)
	case "training/heartbeat":
		if f.leaseLost || !f.claims[kind+id] {
			f.fail(w, http.StatusConflict, "not_claimable", "lease lost")
			return
		}
		w.Write([]byte("{}"))
	case "training/succeeded", "training/failed", "scoring/finished":
		w.Write([]byte("{}"))
	case "scoring/claim":
		key, ok := f.scoring[id]
		if !ok || f.claims[kind+id] {
			f.fail(w, http.StatusConflict, "not_claimable", "run "+id+" is not queued")
			return
		}
		f.claims[kind+id] = true
		json.NewEncoder(w).Encode(map[string]string{"items_key": key})
	default:
		f.fail(w, http.StatusNotFound, "not_found", r.URL.Path)
	}
}

// requests returns the calls whose path ends with suffix.
func (f *fakeAPI) requests(suffix string) []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []request
	for _, r := range f.reqs {
		if strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}

// waitFor blocks until a call with path ending in suffix arrived n times in total.
func (f *fakeAPI) waitFor(suffix string, n int, timeout time.Duration) []request {
	f.t.Helper()
	deadline := time.After(timeout)
	for {
		if rs := f.requests(suffix); len(rs) >= n {
			return rs
		}
		select {
		case <-f.notify:
		case <-deadline:
			f.t.Fatalf("timed out waiting for %d × %s; got %d", n, suffix, len(f.requests(suffix)))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func readJSONLines[T any](t testing.TB, data []byte) []T {
	t.Helper()
	var out []T
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v T
		require.NoError(t, json.Unmarshal(line, &v))
		out = append(out, v)
	}
	return out
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
