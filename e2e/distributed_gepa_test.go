package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/llm/llmtest"
)

// TestDistributedGepa: two GEPA runs requested at once run on the two
// workers at the same time (a worker busy with one never holds the other
// back), and a worker stopped (SIGTERM) mid-run hands its run back: the
// run is queued again and the other worker finishes it, with no failure.
func TestDistributedGepa(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API and two workers, trains a model and runs GEPA")
	}
	refl := llmtest.New(t)
	refl.Handle(func(r llmtest.Request) llmtest.Reply {
		if strings.Contains(r.Last(), "You are naming a skill") {
			return llmtest.Reply{Content: "<name>refund-policy</name>\n<description>Use when a customer asks for a refund.</description>"}
		}
		return llmtest.Reply{Content: "<new_skill_body>\nLook the order up first.\n</new_skill_body>"}
	})
	in, kafkaPort := startServeForJobs(t, "CRITIC_WORKER_LEASE=5s")
	key := in.newUser("gepa-dist", false)
	traces := ratedTraces(t, in, key)
	// The runs' task models (tenant-named bases on loopback) are allowed by
	// the operator, without a key.
	tasks := []*llmtest.Server{llmtest.New(t), llmtest.New(t), llmtest.New(t)}
	env := []string{"OPENAI_BASE_URL=" + refl.URL, "OPENAI_API_KEY=test-key",
		"CRITIC_ALLOWED_API_BASES=" + tasks[0].URL + "," + tasks[1].URL + "," + tasks[2].URL}
	workers := []*workerProc{newWorkerProc(t, in, kafkaPort, "ga", env...), newWorkerProc(t, in, kafkaPort, "gb", env...)}
	for _, w := range workers {
		w.start()
	}
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "gepa-base", "trace_ids": traces, "base_model": tinyBase(t, in), "epochs": 1})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	model := r.JSON(t)["id"].(string)
	require.Equal(t, "succeeded", in.waitModel(t, key, model, "succeeded", "failed")["status"], in.logText())

	// Each run has its own task model; a call waits until both runs have
	// one in flight (or two minutes passed).
	var mu sync.Mutex
	inFlight := map[int]int{}
	overlapped := false
	both := make(chan struct{})
	wait, stopWait := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stopWait()
	request := func(task *llmtest.Server) string {
		r := in.do("POST", "/api/v1/rm/gepa-runs", key, map[string]any{"reward_model_id": model, "task_model": "openai/agent",
			"task_api_base": task.URL, "reflection_model": "openai/reflector", "max_metric_calls": 12})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		return r.JSON(t)["id"].(string)
	}
	var runs []string
	for i := range 2 {
		task := tasks[i]
		task.Handle(func(llmtest.Request) llmtest.Reply {
			mu.Lock()
			inFlight[i]++
			if inFlight[0] > 0 && inFlight[1] > 0 && !overlapped {
				overlapped = true
				close(both)
			}
			mu.Unlock()
			select {
			case <-both:
			case <-wait.Done():
			}
			mu.Lock()
			inFlight[i]--
			mu.Unlock()
			return llmtest.Reply{Content: "Sure! Refund issued, no questions asked."}
		})
		runs = append(runs, request(task))
	}
	holders := map[string]bool{}
	for _, run := range runs {
		require.Equal(t, "succeeded", in.waitGepa(t, key, run, "succeeded", "failed")["status"], in.logText())
		holders[gepaHolder(t, in, run)] = true
	}
	mu.Lock()
	require.True(t, overlapped, "the second GEPA run waited for the first instead of going to the idle worker")
	mu.Unlock()
	require.Len(t, holders, 2, "each worker ran one of the two runs")

	// SIGTERM mid-run: the holder hands the run back; the other worker
	// runs it to success.
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	task := tasks[2]
	task.Handle(func(llmtest.Request) llmtest.Reply {
		once.Do(func() { close(started) })
		select {
		case <-release:
		case <-time.After(2 * time.Minute):
		}
		return llmtest.Reply{Content: "Sure! Refund issued, no questions asked."}
	})
	run := request(task)
	select {
	case <-started:
	case <-time.After(2 * time.Minute):
		t.Fatalf("GEPA run %s never started\n%s", run, in.logText())
	}
	var holder string
	require.Eventually(t, func() bool { holder = gepaHolder(t, in, run); return holder != "" }, time.Minute, 50*time.Millisecond)
	var victim *workerProc
	for _, w := range workers {
		if id, _ := w.alive(0); id == holder {
			victim = w
		}
	}
	require.NotNil(t, victim, "run %s is held by %q, no worker of this test", run, holder)
	victim.signal(syscall.SIGTERM)
	close(release)
	require.Equal(t, "succeeded", in.waitGepa(t, key, run, "succeeded", "failed")["status"], in.logText())
	var handedBack int
	for _, p := range in.openedWhere(t, "gepa_run.requeued.v1", "run_id", run) { // gepa_run payloads are sealed
		if p["reason"] == "handed_back" {
			handedBack++
		}
	}
	failed := len(in.openedWhere(t, "gepa_run.failed.v1", "run_id", run))
	require.Equal(t, 1, handedBack, in.logText())
	require.Zero(t, failed)
	require.NotEqual(t, holder, gepaHolder(t, in, run), "another worker finished it")

	requireReplayMatches(t, in)
}

// gepaHolder is the worker the read model says holds (or last held) a run.
func gepaHolder(t *testing.T, in *instance, run string) string {
	var id string
	require.NoError(t, in.pool.QueryRow(context.Background(), `SELECT coalesce(worker_id, '') FROM rm_gepa_runs WHERE id = $1`, run).Scan(&id))
	return id
}
