package worker

import (
	"context"
	"fmt"
	"github.com/criticml/critic/domain/jobs"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/platform/logtest"
)

// A wrong token stops the worker at start with a message naming the
// variable to fix; it never subscribes or claims anything.
func TestWrongTokenRefusesToStart(t *testing.T) {
	s := newSetup(t)
	cfg := s.config(t, "w-bad")
	cfg.Client = NewClient(s.api.srv.URL, "not-the-token", "w-bad")
	cfg.Brokers = []string{"127.0.0.1:1"} // never reached: the check comes first
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := Run(ctx, cfg)
	require.ErrorIs(t, err, ErrTokenRefused)
	require.Contains(t, err.Error(), "answered 401")
	require.Contains(t, err.Error(), "CRITIC_WORKER_TOKEN")
	require.Len(t, s.api.requests("/hello"), 1)
	require.Len(t, s.api.requests(""), 1, "nothing but the check was called")
}

// An unreachable API is retried with one clear log line, and no job is
// taken until it answers; then the worker starts.
func TestUnreachableAPIIsRetriedBeforeAnyJob(t *testing.T) {
	s := newSetup(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there yet
	var logs logtest.Buffer
	w, err := New(Config{Client: NewClient("http://"+addr, testToken, "w-wait"), Blobs: s.blobs, DataDir: s.data,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- w.AwaitAPI(context.Background()) }()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "the API cannot be reached") }, time.Minute, 20*time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("AwaitAPI returned %v before the API answered", err)
	default:
	}
	// The API comes up at that address.
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: s.api.srv.Config.Handler}}
	srv.Start()
	defer srv.Close()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("AwaitAPI did not return once the API answered")
	}
	require.Equal(t, 1, strings.Count(logs.String(), "the API cannot be reached"), "said once, not per retry")
	require.Contains(t, logs.String(), "starting to take jobs")
	require.Empty(t, s.api.requests("/claim"), "no job was taken")
}

// CRITIC_API_URL may list several instances: a call that cannot reach the
// first goes to the next, and the client sticks with the one that answered.
func TestClientFailsOverBetweenAPIURLs(t *testing.T) {
	s := newSetup(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no healthy upstream", http.StatusServiceUnavailable) // a proxy in front of a dead instance
	}))
	defer down.Close()
	c := NewClient(dead+", "+down.URL+" ,"+s.api.srv.URL+"/", testToken, "w-multi")
	require.Equal(t, []string{dead, down.URL, s.api.srv.URL}, c.BaseURLs())
	_, err = c.Hello(context.Background())
	require.NoError(t, err)
	require.Equal(t, s.api.srv.URL, c.Current())
	claim, err := c.ClaimNextTraining(context.Background(), "worker")
	require.NoError(t, err)
	require.Nil(t, claim, "nothing is queued")
	require.Len(t, s.api.requests("/jobs/train/claim"), 1)

	// All down: the error names the instances and is transient (retried).
	c = NewClient(dead+","+down.URL, testToken, "w-multi")
	_, err = c.Hello(context.Background())
	require.Error(t, err)
	require.True(t, Transient(err), "%v", err)
	require.Contains(t, err.Error(), down.URL)
}

// A worker whose API goes away mid-run leaves its job topics, so the jobs
// on its partitions go to a worker that can reach the API; it rejoins when
// the API answers again.
func TestWorkerWithoutAPIReleasesItsJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and two workers")
	}
	s := newSetup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	broker, err := bus.StartEmbedded(ctx, bus.EmbeddedConfig{})
	require.NoError(t, err)
	defer broker.Close()
	pub, err := bus.NewPublisher(bus.Config{Brokers: broker.Addrs()}, nil)
	require.NoError(t, err)
	defer pub.Close()

	// Worker A reaches the API through a proxy that can lose its upstream.
	var down atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "no healthy upstream", http.StatusServiceUnavailable)
			return
		}
		s.api.srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	var logsA logtest.Buffer
	run := func(c *Client, log *slog.Logger) chan error {
		cfg := Config{Client: c, Blobs: s.blobs, DataDir: t.TempDir(), Log: log, Brokers: broker.Addrs(), ClaimPollInterval: 100 * time.Millisecond}
		done := make(chan error, 1)
		go func() { done <- Run(ctx, cfg) }()
		return done
	}
	doneA := run(NewClient(proxy.URL, testToken, "w-a"), slog.New(slog.NewTextHandler(io.MultiWriter(&logsA, tWriter{t}), nil)))
	doneB := run(s.api.client("w-b"), testLogger(t))
	require.Eventually(t, func() bool { return len(s.api.requests("/hello")) == 2 }, time.Minute, 50*time.Millisecond)

	down.Store(true)
	require.Eventually(t, func() bool { return strings.Contains(logsA.String(), "leaving the job topics") }, time.Minute, 50*time.Millisecond)
	// Jobs on every partition: all are taken by B (their claims name it).
	const n = 8
	for i := range n {
		run := fmt.Sprintf("run-%d", i)
		publish(t, pub, jobs.TopicScore, run, jobs.ScoreJob{RunID: run, TraceID: "t", ModelID: "m", OwnerID: s.api.owner.UserID})
	}
	scoring := func() []request {
		var out []request
		for _, r := range s.api.requests("/claim") {
			if strings.Contains(r.Path, "/jobs/score/") {
				out = append(out, r)
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(scoring()) >= n }, 2*time.Minute, 50*time.Millisecond)
	for _, c := range scoring() {
		require.Equal(t, "w-b", c.Body["worker_id"], "%s was taken by the worker without an API", c.Path)
	}

	// The API is back: A rejoins and takes jobs again.
	down.Store(false)
	require.Eventually(t, func() bool { return strings.Contains(logsA.String(), "rejoining the job topics") }, time.Minute, 50*time.Millisecond)
	cancel()
	require.NoError(t, <-doneA)
	require.NoError(t, <-doneB)
}
