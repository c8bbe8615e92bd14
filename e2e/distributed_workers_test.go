package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// workerProc is one `critic worker` process the distributed tests start,
// stop (SIGTERM), kill (kill -9) and start again under a fresh id.
type workerProc struct {
	t         testing.TB
	in        *instance
	kafkaPort int
	name      string
	extra     []string

	mu      sync.Mutex
	gen     int
	id      string    // CRITIC_WORKER_ID of the running incarnation
	cmd     *exec.Cmd // nil while down
	upSince time.Time
}

func newWorkerProc(t testing.TB, in *instance, kafkaPort int, name string, extra ...string) *workerProc {
	p := &workerProc{t: t, in: in, kafkaPort: kafkaPort, name: name, extra: extra}
	t.Cleanup(p.kill)
	return p
}

// start runs a new incarnation, named <name>-<n>.
func (p *workerProc) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	p.id = fmt.Sprintf("%s-%d", p.name, p.gen)
	cmd := exec.Command(p.in.bin, "worker")
	cmd.Env = append(append(os.Environ(), "CRITIC_API_URL="+p.in.url, "CRITIC_WORKER_TOKEN=e2e-worker-token",
		fmt.Sprintf("KAFKA_BROKERS=127.0.0.1:%d", p.kafkaPort), "BLOB_URL=file://"+filepath.Join(p.in.dataDir, "blobs"),
		"CRITIC_DATA_DIR="+p.t.TempDir(), "CRITIC_WORKER_ID="+p.id, "DATABASE_URL=", "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=",
		"CRITIC_STEP_LABEL_MODEL=off", "CRITIC_WORKER_METRICS_ADDR=off"), p.extra...)
	cmd.Stdout = &lockedWriter{mu: &p.in.logMu, w: p.in.logs}
	cmd.Stderr = &lockedWriter{mu: &p.in.logMu, w: p.in.logs}
	require.NoError(p.t, cmd.Start())
	p.cmd, p.upSince = cmd, time.Now()
}

// signal sends sig and waits for the process to exit.
func (p *workerProc) signal(sig syscall.Signal) {
	p.mu.Lock()
	cmd := p.cmd
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { _, _ = cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (p *workerProc) kill() { p.signal(syscall.SIGKILL) }

// alive is the running incarnation's id, when it has been up for at least
// grace (time to check the API and join the group).
func (p *workerProc) alive(grace time.Duration) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.id, p.cmd != nil && time.Since(p.upSince) >= grace
}

// modelRows is each model's status and worker as the read model says.
func modelRows(t testing.TB, in *instance, ids []string) (queued int, holders map[string]bool, statuses map[string]string) {
	rows, err := in.pool.Query(context.Background(), `SELECT id::text, status, dataset_key IS NOT NULL, coalesce(worker_id, '')
		FROM rm_reward_models WHERE id = ANY($1::uuid[])`, ids)
	require.NoError(t, err)
	defer rows.Close()
	holders, statuses = map[string]bool{}, map[string]string{}
	for rows.Next() {
		var id, status, worker string
		var built bool
		require.NoError(t, rows.Scan(&id, &status, &built, &worker))
		statuses[id] = status
		switch {
		case status == "queued" && built:
			queued++
		case status == "running":
			holders[worker] = true
		}
	}
	require.NoError(t, rows.Err())
	return queued, holders, statuses
}

// TestDistributedWorkers: one API, two `critic worker` processes, several
// models requested at once; the test SIGTERMs and kill -9s the workers at
// random moments (preferring one that is training) and starts them again.
// Throughout, a claimable model never waits while a worker is up and idle
// for longer than a few claim polls; at the end every model succeeded (or
// failed after 3 lost runs with the readable reason), none was trained to
// success twice, the hand-backs and requeues are in the log, and the read
// model equals a replay of it. CRITIC_DIST_SEED repeats a schedule.
func TestDistributedWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API and two workers and trains several models")
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("CRITIC_DIST_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("CRITIC_DIST_SEED=%d", seed)
	rng := rand.New(rand.NewSource(seed))

	in, kafkaPort := startServeForJobs(t, "CRITIC_WORKER_LEASE=3s")
	key := in.newUser("distributed", false)
	traces := ratedTraces(t, in, key)
	base := sizedBase(t, in, "64", "2")
	workers := []*workerProc{newWorkerProc(t, in, kafkaPort, "wa"), newWorkerProc(t, in, kafkaPort, "wb")}
	for _, w := range workers {
		w.start()
	}
	const models = 6
	var ids []string
	for i := range models {
		r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": fmt.Sprintf("dist-%d", i), "trace_ids": traces,
			"base_model": base, "epochs": 12})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		require.Equal(t, "worker", r.JSON(t)["compute"], "`critic serve` trains on workers")
		ids = append(ids, r.JSON(t)["id"].(string))
	}

	// The monitor: a claimable model and an idle live worker at the same
	// time, for longer than starveLimit, is a violation.
	const grace, starveLimit = 5 * time.Second, 10 * time.Second
	var (
		monMu      sync.Mutex
		violations []string
		starved    time.Time
		maxRunning int
	)
	stopMon := make(chan struct{})
	monDone := make(chan struct{})
	go func() {
		defer close(monDone)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopMon:
				return
			case <-tick.C:
			}
			queued, holders, _ := modelRows(t, in, ids)
			idle, busy := []string{}, 0
			for _, w := range workers {
				id, ok := w.alive(grace)
				switch {
				case ok && !holders[id]:
					idle = append(idle, id)
				case holders[id]:
					busy++
				}
			}
			monMu.Lock()
			maxRunning = max(maxRunning, busy)
			if queued > 0 && len(idle) > 0 {
				if starved.IsZero() {
					starved = time.Now()
				} else if time.Since(starved) > starveLimit {
					violations = append(violations, fmt.Sprintf("%s: %d claimable models while %v idle for %s",
						time.Now().Format(time.RFC3339Nano), queued, idle, time.Since(starved).Round(time.Millisecond)))
					starved = time.Now()
				}
			} else {
				starved = time.Time{}
			}
			monMu.Unlock()
		}
	}()

	// The chaos: six interruptions at random moments.
	var terms, kills int
	for round := range 6 {
		time.Sleep(time.Duration(1000+rng.Intn(3000)) * time.Millisecond)
		_, holders, _ := modelRows(t, in, ids)
		victim := workers[rng.Intn(len(workers))]
		for _, i := range rng.Perm(len(workers)) {
			w := workers[i]
			if id, ok := w.alive(0); ok && holders[id] && rng.Intn(3) > 0 {
				victim = w // usually one that is training
				break
			}
		}
		if rng.Intn(2) == 0 {
			t.Logf("round %d: SIGTERM %s", round, victim.id)
			victim.signal(syscall.SIGTERM)
			terms++
		} else {
			t.Logf("round %d: kill -9 %s", round, victim.id)
			victim.kill()
			kills++
		}
		time.Sleep(time.Duration(300+rng.Intn(1500)) * time.Millisecond)
		victim.start()
	}

	// Everything finishes.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		_, _, statuses := modelRows(t, in, ids)
		done := 0
		for _, s := range statuses {
			if s == "succeeded" || s == "failed" {
				done++
			}
		}
		if done == models {
			break
		}
		require.True(t, time.Now().Before(deadline), "models did not finish: %v\n%s", statuses, in.logText())
		time.Sleep(250 * time.Millisecond)
	}
	close(stopMon)
	<-monDone
	monMu.Lock()
	require.Empty(t, violations, "a claimable model waited while a worker was idle")
	require.Equal(t, 2, maxRunning, "both live workers trained at once at some point")
	monMu.Unlock()

	var succeeded int
	for _, id := range ids {
		m := in.do("GET", "/api/v1/rm/reward-models/"+id, key, nil).JSON(t)
		wins := in.countEvents(t, "reward_model.training_succeeded.v1", id)
		switch m["status"] {
		case "succeeded":
			succeeded++
			require.Equal(t, 1, wins, "model %s was trained to success once", id)
			require.Equal(t, "worker", m["compute"])
			require.Regexp(t, `^w[ab]-\d+$`, m["worker_id"], "the model names the worker that trained it")
		case "failed":
			require.Equal(t, 0, wins)
			first, _, _ := strings.Cut(m["error"].(string), "\n")
			require.Equal(t, "training failed: the worker was lost 3 times (lease expired each time); retry the model once the workers are healthy", first,
				"the only way a model fails here: its worker was killed three times")
		default:
			t.Fatalf("model %s ended %v", id, m["status"])
		}
	}
	require.Positive(t, succeeded)
	requeues := in.openedPayloads(t, "reward_model.training_requeued.v1") // reward_model payloads are sealed
	requeued, handedBack := len(requeues), 0
	for _, p := range requeues {
		if p["reason"] == "handed_back" {
			handedBack++
		}
	}
	t.Logf("%d SIGTERMs, %d kill -9s; %d requeues (%d hand-backs); %d of %d models succeeded", terms, kills, requeued, handedBack, succeeded, models)
	require.Positive(t, requeued, "the interruptions handed back or lost at least one run")

	requireReplayMatches(t, in)
}
