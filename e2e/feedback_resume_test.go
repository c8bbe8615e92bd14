package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/llm/llmtest"
)

// TestFeedbackExtractionSurvivesStoppedAndKilledWorkers: a worker stopped
// (SIGTERM) mid-extraction hands it back and the next worker takes it at
// once; a worker killed (SIGKILL) mid-extraction leaves it to the lease
// sweep, which requeues it once the lease (3 s) has run out and publishes
// it again; a third worker finishes it. Each requeue is an event with its
// reason.
func TestFeedbackExtractionSurvivesStoppedAndKilledWorkers(t *testing.T) {
	srv := llmtest.New(t)
	srv.Handle(scriptedClassifier)
	llmEnv := []string{"CRITIC_FEEDBACK_MODEL=openai/scripted-classifier", "CRITIC_FEEDBACK_API_BASE=" + srv.URL, "OPENAI_API_KEY=test-key",
		"CRITIC_FAST_MODEL=openai/scripted-fast", "CRITIC_FAST_API_BASE=" + srv.URL}
	in, kafkaPort := startServeForJobs(t, append([]string{"CRITIC_WORKER_LEASE=3s"}, llmEnv...)...)
	key := in.newUser("resumer", false)
	base := tinyBase(t, in)
	ids := in.importTraces(key, "stash", strings.Join([]string{
		`{"id":"sort-1","steps":[{"role":"user","content":"Sort 3, 1, 2 ascending"},{"role":"assistant","content":"Sorted: 3, 2, 1."},{"role":"user","content":"No, that's the wrong order."}]}`,
		`{"id":"sort-2","steps":[{"role":"user","content":"Sort a, c, b"},{"role":"assistant","content":"Sorted: a, b, c."},{"role":"user","content":"Thanks, perfect."}]}`,
		`{"id":"sort-3","steps":[{"role":"user","content":"Sort z, y"},{"role":"assistant","content":"Sorted: y, z."}]}`,
	}, "\n"))
	srv.SetLatency(5 * time.Second) // every extraction below is still running when its worker goes
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "resumed", "trace_ids": ids, "base_model": base,
		"training_config": map[string]any{"annotation_source": "feedback", "input_version": 1}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	id := r.JSON(t)["id"].(string)
	started := func(n int) {
		require.Eventually(t, func() bool { return in.countEvents(t, "reward_model.extraction_started.v1", id) == n },
			time.Minute, 50*time.Millisecond, "claim %d of the extraction\n%s", n, in.logText())
	}

	w1 := startWorkerWith(t, in, kafkaPort, "fw1", llmEnv...)
	started(1)
	require.NoError(t, w1.Process.Signal(syscall.SIGTERM))
	_, _ = w1.Process.Wait()
	require.Equal(t, 1, in.countEvents(t, "reward_model.extraction_requeued.v1", id), in.logText())

	w2 := startWorkerWith(t, in, kafkaPort, "fw2", llmEnv...)
	started(2)
	require.NoError(t, w2.Process.Kill())
	_, _ = w2.Process.Wait()

	srv.SetLatency(0)
	startWorkerWith(t, in, kafkaPort, "fw3", llmEnv...)
	require.Eventually(t, func() bool { return in.countEvents(t, "reward_model.extraction_finished.v1", id) == 1 },
		2*time.Minute, 100*time.Millisecond, in.logText())

	var requeues []string // reward_model payloads are sealed: opened, in log order
	for _, p := range in.openedWhere(t, "reward_model.extraction_requeued.v1", "model_id", id) {
		requeues = append(requeues, fmt.Sprint(p["reason"])+" "+fmt.Sprint(p["worker_id"]))
	}
	// fw3 may get fw2's message again after the lease ran out but before
	// the sweep's next tick (it claims then); otherwise the sweep requeued
	// it (the sweep itself: projections/dispatch's extraction sweep test).
	require.NotEmpty(t, requeues)
	require.Equal(t, "handed_back fw1", requeues[0])
	for _, rq := range requeues[1:] {
		require.Equal(t, "lease_expired fw2", rq)
	}
	require.LessOrEqual(t, len(requeues), 2)
	finished := in.openedWhere(t, "reward_model.extraction_finished.v1", "model_id", id)
	require.Len(t, finished, 1)
	require.Equal(t, "fw3", finished[0]["worker_id"])
	require.Equal(t, 3, in.countEvents(t, "reward_model.extraction_started.v1", id))
}
