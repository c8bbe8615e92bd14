package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// longTraining requests a model whose training runs for many seconds, so a
// test can interrupt it.
func longTraining(t *testing.T, in *instance, key string, ids []string, base string) string {
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "long", "trace_ids": ids, "base_model": base, "epochs": 100})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	return r.JSON(t)["id"].(string)
}

// waitRunningWithProgress waits until the worker heartbeated progress.
func (in *instance) waitRunningWithProgress(t *testing.T, key, id string) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		m := in.do("GET", "/api/v1/rm/reward-models/"+id, key, nil).JSON(t)
		if m["status"] == "running" && m["progress"] != nil {
			return
		}
		require.NotContains(t, []any{"succeeded", "failed"}, m["status"], "finished before it could be interrupted: %v", m)
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("model %s never reported progress:\n%s", id, in.logText())
}

func (in *instance) countEvents(t *testing.T, typ, modelID string) int {
	var n int
	require.NoError(t, in.pool.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE type = $1 AND stream = 'reward_model/' || $2`, typ, modelID).Scan(&n))
	return n
}

// TestWorkerKilledMidTrainingIsRetriedOnAnotherWorker: a worker killed
// (kill -9) mid-training loses its lease; the attempt goes back to the
// queue by itself and another worker trains it to success — no manual
// retry, the same attempt and dataset, one success.
func TestWorkerKilledMidTrainingIsRetriedOnAnotherWorker(t *testing.T) {
	in, kafkaPort := startServeForJobs(t, "CRITIC_WORKER_LEASE=3s")
	key := in.newUser("faulty", false)
	ids := ratedTraces(t, in, key)
	base := sizedBase(t, in, "64", "2") // slow enough to interrupt
	w1 := startWorker(t, in, kafkaPort, "w1")
	id := longTraining(t, in, key, ids, base)
	in.waitRunningWithProgress(t, key, id)

	require.NoError(t, w1.Process.Signal(syscall.SIGKILL))
	_, _ = w1.Process.Wait()
	m := in.waitModel(t, key, id, "queued", "failed", "succeeded")
	require.Equal(t, "queued", m["status"], "%v", m["error"])
	require.Nil(t, m["worker_id"])
	require.Regexp(t, `msg="lease expired: training requeued for another worker".*lost_runs=1`, in.logText())

	startWorker(t, in, kafkaPort, "w2")
	m = in.waitModel(t, key, id, "succeeded", "failed")
	require.Equal(t, "succeeded", m["status"], "%v", m["error"])
	require.Equal(t, "w2", m["worker_id"], "the model shows the worker that trained it")
	require.Equal(t, "worker", m["compute"])
	require.ElementsMatch(t, toAny(ids), m["trace_ids"], "same selection")

	require.Equal(t, 1, in.countEvents(t, "reward_model.training_succeeded.v1", id), "nothing duplicated")
	require.Equal(t, 2, in.countEvents(t, "reward_model.training_started.v1", id), "one start per run")
	require.Equal(t, 1, in.countEvents(t, "reward_model.training_requeued.v1", id))
	require.Equal(t, 1, in.countEvents(t, "reward_model.dataset_built.v1", id), "the same attempt and dataset")
	require.Equal(t, 0, in.countEvents(t, "reward_model.retried.v1", id), "no manual retry")
	var scores int
	require.NoError(t, in.pool.QueryRow(context.Background(), `SELECT count(*) FROM rm_trace_scores WHERE model_id = $1`, id).Scan(&scores))
	require.Equal(t, len(ids), scores)
}

func TestAPIKilledWhileJobRunsLosesNothing(t *testing.T) {
	apiPort := freePort(t)
	in, kafkaPort := startServeForJobs(t, fmt.Sprintf("CRITIC_ADDR=127.0.0.1:%d", apiPort), "CRITIC_WORKER_LEASE=20s")
	key := in.newUser("crashy", false)
	ids := ratedTraces(t, in, key)
	base := sizedBase(t, in, "64", "2") // slow enough to interrupt
	startWorker(t, in, kafkaPort, "steady")
	id := longTraining(t, in, key, ids, base)
	in.waitRunningWithProgress(t, key, id)

	require.NoError(t, in.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = in.cmd.Process.Wait()
	in.cmd = nil
	time.Sleep(time.Second)
	in.start() // same database, data dir, broker port and address

	m := in.waitModel(t, key, id, "succeeded", "failed")
	require.Equal(t, "succeeded", m["status"], "%v\n%s", m["error"], in.logText())
	require.Equal(t, 1, in.countEvents(t, "reward_model.training_succeeded.v1", id))
	require.Equal(t, 1, in.countEvents(t, "reward_model.training_started.v1", id))
	for _, tid := range ids {
		require.Len(t, in.getTrace(t, key, tid).Scores, 1)
	}
}

func TestBrokerDownWhileAModelIsRequested(t *testing.T) {
	kafkaPort := freePort(t)
	brokerDir := t.TempDir()
	startBroker := func() *exec.Cmd {
		cmd := exec.Command(criticBin(t), "broker", "--port", fmt.Sprint(kafkaPort), "--data-dir", brokerDir)
		cmd.Env = append(os.Environ(), "CRITIC_DATA_DIR="+t.TempDir())
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		buf := make([]byte, 256)
		n, _ := out.Read(buf)
		require.Contains(t, string(buf[:n]), "listening")
		t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
		return cmd
	}
	broker := startBroker()
	in := startServe(t, fmt.Sprintf("KAFKA_BROKERS=127.0.0.1:%d", kafkaPort), "CRITIC_WORKER_TOKEN=e2e-worker-token")
	key := in.newUser("patient", false)
	ids := ratedTraces(t, in, key)
	base := sizedBase(t, in, "64", "2") // slow enough to interrupt
	startWorker(t, in, kafkaPort, "w")

	require.NoError(t, broker.Process.Signal(syscall.SIGKILL))
	_, _ = broker.Process.Wait()
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "while-down", "trace_ids": ids, "base_model": base})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	id := r.JSON(t)["id"].(string)
	require.Equal(t, "queued", r.JSON(t)["status"])
	require.Equal(t, 1, in.countEvents(t, "reward_model.requested.v1", id), "the request is in Postgres")

	startBroker()
	m := in.waitModel(t, key, id, "succeeded", "failed")
	require.Equal(t, "succeeded", m["status"], "%v", m["error"])
}
