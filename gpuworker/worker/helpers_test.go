package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/criticml/critic/domain/jobs"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/gpuworker/train"
	"github.com/criticml/critic/handlers/workerapi"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/readmodel"
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

// testDataset has trace pairs and action pairs over five traces (a usable split),
// score items for every trace and two action items.
func testDataset(modelID string) rewardmodels.Dataset {
	ds := rewardmodels.Dataset{ModelID: modelID, Attempt: 1}
	for i, tr := range []string{"t1", "t2", "t3", "t4", "t5"} {
		ds.Pairs = append(ds.Pairs,
			rewardmodels.DatasetPair{Chosen: "user: hi\nassistant: the answer is right " + tr, Rejected: "user: hi\nassistant: no " + tr,
				TraceIDs: []string{tr}, Granularity: "trace"},
			rewardmodels.DatasetPair{Chosen: "assistant: lookup(" + tr + ")", Rejected: "assistant: drop(" + tr + ")",
				TraceIDs: []string{tr}, Granularity: "step", ActionType: new([]string{"tool_call", "response"}[i%2])})
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

// request is one call the worker service received, and its answer.
type request struct {
	Path   string
	Body   map[string]any
	Raw    []byte
	Status int
}

// service is the API's real worker service (handlers/workerapi over the
// real commands, event store and PostgreSQL) on an httptest server, with a
// recorder in front so a test can see what the worker sent and what it was
// answered. Nothing in it imitates the service: claims, leases and reports
// are decided by the same code `critic serve` runs.
type service struct {
	t      testing.TB
	srv    *httptest.Server
	cmds   *commands.Commands
	store  *eventstore.Store
	owner  commands.Actor
	traces []string

	mu     sync.Mutex
	reqs   []request
	notify chan string // every path, as its answer is written
	// answered, when set, runs after the service handled a call and
	// before its answer leaves (a worker stopped in between).
	answered func(path string)
}

// newService starts the worker service over a fresh database and the given
// blob store, with an account that has five rated traces (trace and step
// ratings, tool calls and answers: pairs of both kinds and action items).
func newService(t testing.TB, blobs blob.Store) *service {
	t.Helper()
	return newServiceWith(t, blobs)
}

// newServiceWith is newService with the API's command options (a feedback
// model, for extraction).
func newServiceWith(t testing.TB, blobs blob.Store, opts ...commands.Option) *service {
	t.Helper()
	pool := pgtest.NewPool(t)
	store := eventstore.New(pool, blobs)
	s := &service{t: t, cmds: commands.New(store, append([]commands.Option{commands.WithModelRoots(os.TempDir()), commands.WithSecret(testToken)}, opts...)...), store: store, notify: make(chan string, 1000)}
	queue := &liveQueue{store: store, proj: readmodel.New(pool, blobs, slog.New(slog.NewTextHandler(io.Discard, nil))),
		q: readmodel.NewQueries(pool)}
	mux := http.NewServeMux()
	workerapi.New(workerapi.Config{Cmds: s.cmds, Token: testToken, Lease: 30 * time.Second, TrainingQueue: queue}).Register(mux)
	s.srv = httptest.NewServer(http.HandlerFunc(s.record(mux)))
	t.Cleanup(s.srv.Close)

	ctx := context.Background()
	u, err := s.cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "worker-tests"})
	require.NoError(t, err)
	s.owner = commands.Actor{UserID: u.UserID}
	var lines []string
	for i := range 5 {
		answer := []string{"the answer is right", "no"}[i%2]
		lines = append(lines, fmt.Sprintf(`{"id":"t%d","steps":[{"role":"user","content":"hi %d"},`+
			`{"role":"assistant","content":"","tool_name":"%s","tool_input":{"q":"%d"},"tool_call_id":"c%d"},`+
			`{"role":"tool","content":"%d","tool_name":"%s","tool_call_id":"c%d"},{"role":"assistant","content":"%s %d"}]}`,
			i, i, []string{"lookup", "drop"}[i%2], i, i, i, []string{"lookup", "drop"}[i%2], i, answer, i))
	}
	imp, err := s.cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: s.owner, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(strings.Join(lines, "\n"))}})
	require.NoError(t, err)
	s.traces = imp.TraceIDs
	for i, id := range s.traces {
		r := []int{1, -1}[i%2]
		st := s.traceSteps(t, id)
		for _, a := range []commands.AddAnnotationInput{
			{TraceID: id, Rating: &r, AuthorName: "t"},
			{TraceID: id, StepID: st[1], Rating: &r, AuthorName: "t"},
			{TraceID: id, StepID: st[3], Rating: &r, AuthorName: "t"},
		} {
			_, err := s.cmds.AddAnnotation.Handle(ctx, commands.AddAnnotation{Actor: s.owner, Input: a})
			require.NoError(t, err)
		}
	}
	return s
}

// liveQueue is the read model's training queue, caught up with the log
// before every lookup: the real projection and query `critic serve` runs,
// without a broker in between.
type liveQueue struct {
	store *eventstore.Store
	proj  *readmodel.Projection
	q     *readmodel.Queries

	mu      sync.Mutex
	applied int64
}

func (l *liveQueue) ClaimableTraining(ctx context.Context, limit int) ([]rewardmodels.TrainingCandidate, error) {
	l.mu.Lock()
	for {
		evs, err := l.store.ReadAfter(ctx, l.applied, 1000)
		if err == nil && len(evs) > 0 {
			err = l.proj.Apply(ctx, evs)
		}
		if err != nil {
			l.mu.Unlock()
			return nil, err
		}
		if len(evs) == 0 {
			break
		}
		l.applied = evs[len(evs)-1].Seq
	}
	l.mu.Unlock()
	return l.q.ClaimableTraining(ctx, limit)
}

// traceSteps returns a trace's step ids in order, from its stream.
func (s *service) traceSteps(t testing.TB, traceID string) []string {
	t.Helper()
	loaded, err := s.store.LoadStreams(context.Background(), []string{events.TraceStream(traceID)})
	require.NoError(t, err)
	var st traces.State
	for _, e := range loaded[events.TraceStream(traceID)] {
		st.Apply(e)
	}
	ids := make([]string, len(st.Steps))
	for i, x := range st.Steps {
		ids[i] = x.ID
	}
	return ids
}

// queueTraining requests a model on every trace with the given base and
// builds its dataset, as the dispatch projection does: the model is queued
// and claimable. It returns the model id and the dataset.
func (s *service) queueTraining(t testing.TB, base string) (string, rewardmodels.Dataset) {
	t.Helper()
	ctx := context.Background()
	req, err := s.cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: s.owner, Input: commands.RequestTrainingInput{Name: "rm", TraceIDs: s.traces, BaseModel: base, Epochs: 2}})
	require.NoError(t, err)
	_, err = s.cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
	require.NoError(t, err)
	m, err := s.cmds.Streams.Model(ctx, req.ModelID)
	require.NoError(t, err)
	require.NotNil(t, m.Dataset, "the dataset was built")
	raw, err := s.store.Blobs().Get(ctx, m.Dataset.DatasetKey)
	require.NoError(t, err)
	var ds rewardmodels.Dataset
	require.NoError(t, json.Unmarshal(raw, &ds))
	return req.ModelID, ds
}

// trainMessage is the job the dispatch projection publishes for a model.
func (s *service) trainMessage(modelID string) jobs.TrainJob {
	return jobs.TrainJob{ModelID: modelID, Attempt: 1, OwnerID: s.owner.UserID}
}

// status is the model's status as its stream says.
func (s *service) status(t testing.TB, modelID string) rewardmodels.State {
	t.Helper()
	m, err := s.cmds.Streams.Model(context.Background(), modelID)
	require.NoError(t, err)
	return m
}

func (s *service) client(workerID string) *Client {
	return NewClient(s.srv.URL, testToken, workerID)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (s *service) record(next http.Handler) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		s.mu.Lock()
		s.reqs = append(s.reqs, request{Path: r.URL.Path, Body: body, Raw: raw, Status: sw.status})
		answered := s.answered
		s.mu.Unlock()
		if answered != nil {
			answered(r.URL.Path)
		}
		s.notify <- r.URL.Path
	}
}

// requests returns the calls whose path ends with suffix.
func (s *service) requests(suffix string) []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []request
	for _, r := range s.reqs {
		if strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}

// requestsOf are the requests about jobs of kind whose path ends with suffix.
func (s *service) requestsOf(kind jobs.Kind, suffix string) []request {
	var out []request
	for _, r := range s.requests(suffix) {
		if strings.Contains(r.Path, "/jobs/"+string(kind)+"/") {
			out = append(out, r)
		}
	}
	return out
}

// waitFor blocks until a call with path ending in suffix arrived n times in total.
func (s *service) waitFor(suffix string, n int, timeout time.Duration) []request {
	s.t.Helper()
	deadline := time.After(timeout)
	for {
		if rs := s.requests(suffix); len(rs) >= n {
			return rs
		}
		select {
		case <-s.notify:
		case <-deadline:
			s.t.Fatalf("timed out waiting for %d × %s; got %d", n, suffix, len(s.requests(suffix)))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func readJSONLines[T any](t testing.TB, data []byte) []T {
	t.Helper()
	var out []T
	for line := range bytes.SplitSeq(data, []byte("\n")) {
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

// The tests' base models are written under the temporary directory: it is
// the operator's model root here, as CRITIC_MODEL_ROOTS would name it.
func init() { os.Setenv("CRITIC_MODEL_ROOTS", os.TempDir()) }
