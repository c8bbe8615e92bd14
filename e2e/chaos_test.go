package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/pg"
	"github.com/criticml/critic/platform/pg/pgtest"
)

// chaosProc is one process of the chaos stack that the test kills and restarts.
type chaosProc struct {
	name  string
	bin   string
	args  []string
	env   []string
	ready string // text of the stdout line that says it is up; "": up at once
	logs  *lockedWriter
	cmd   *exec.Cmd
}

func (p *chaosProc) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = p.env
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = p.logs
	require.NoError(t, cmd.Start())
	p.cmd = cmd
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = p.logs.Write([]byte(p.name + ": " + line + "\n"))
			if !signalled && p.ready != "" && strings.Contains(line, p.ready) {
				close(up)
				signalled = true
			}
		}
	}()
	if p.ready == "" {
		return
	}
	select {
	case <-up:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not start", p.name)
	}
}

// kill is kill -9: no shutdown, no flush, no goodbye to the consumer group.
func (p *chaosProc) kill() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_, _ = p.cmd.Process.Wait()
	p.cmd = nil
}

func (p *chaosProc) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _, _ = p.cmd.Process.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
}

// acked is what the clients were told succeeded.
type acked struct {
	mu          sync.Mutex
	imports     map[string]string // trace id → owner key
	annotations map[string]string // annotation id → trace id
	otel        map[string]string // OTel trace hex → owner key
	models      map[string]string // model id → owner key
	failures    int               // writes that got no acknowledgement
}

func (a *acked) add(m map[string]string, k, v string) {
	a.mu.Lock()
	m[k] = v
	a.mu.Unlock()
}

func (a *acked) fail() {
	a.mu.Lock()
	a.failures++
	a.mu.Unlock()
}

// TestChaos runs several clients that import, annotate, send OTLP spans and
// request models, while the test kill -9s the API, a second API process
// (a projection consumer and relay of the same consumer groups) and the
// worker at random moments and restarts them. Afterwards every acknowledged
// write must be in the read model, nothing may be duplicated, and the read
// model must equal a replay of the log. CRITIC_CHAOS_SEED repeats a run's
// schedule of kills (the moments the processes reach are timing's).
func TestChaos(t *testing.T) {
	if os.Getenv("CRITIC_CHAOS") == "" {
		// Opt-in: it starts five processes and kills some for about a
		// minute, which a shared machine running other suites should not
		// get unasked. `make chaos` (and `make test`, once it sets
		// CRITIC_CHAOS=1) runs it.
		t.Skip("set CRITIC_CHAOS=1 (make chaos): kills and restarts processes for about a minute")
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("CRITIC_CHAOS_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
	}
	rng := rand.New(rand.NewSource(seed))
	t.Logf("chaos seed %d (CRITIC_CHAOS_SEED=%d repeats this schedule)", seed, seed)

	bin := criticBin(t)
	dbURL := pgtest.NewDatabase(t)
	root := t.TempDir()
	var logBuf bytes.Buffer
	logs := &lockedWriter{mu: &sync.Mutex{}, w: &logBuf}
	kafkaPort, apiPort := freePort(t), freePort(t)
	apiURL := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	common := append(os.Environ(), "DATABASE_URL="+dbURL, fmt.Sprintf("KAFKA_BROKERS=127.0.0.1:%d", kafkaPort),
		"BLOB_URL=file://"+filepath.Join(root, "blobs"), sharedMasterKey(t, root), "CRITIC_WORKER_TOKEN=chaos-token", "CRITIC_WORKER_LEASE=3s")
	defer func() {
		if t.Failed() {
			logs.mu.Lock()
			t.Logf("process logs:\n%s", logBuf.String())
			logs.mu.Unlock()
		}
	}()

	broker := &chaosProc{name: "broker", bin: bin, args: []string{"broker", "--port", strconv.Itoa(kafkaPort), "--data-dir", filepath.Join(root, "kafka")},
		env: common, ready: "broker listening", logs: logs}
	api := &chaosProc{name: "api", bin: bin, args: []string{"serve"}, logs: logs, ready: "listening on",
		env: append(append([]string{}, common...), fmt.Sprintf("CRITIC_ADDR=127.0.0.1:%d", apiPort), "CRITIC_DATA_DIR="+filepath.Join(root, "api"), "CRITIC_INSTANCE_ID=api")}
	consumer := &chaosProc{name: "consumer", bin: bin, args: []string{"serve"}, logs: logs, ready: "listening on",
		env: append(append([]string{}, common...), "CRITIC_ADDR=127.0.0.1:0", "CRITIC_DATA_DIR="+filepath.Join(root, "consumer"), "CRITIC_INSTANCE_ID=consumer")}
	worker := &chaosProc{name: "worker", bin: bin, args: []string{"worker"}, logs: logs,
		env: append(append([]string{}, common...), "CRITIC_API_URL="+apiURL, "CRITIC_DATA_DIR="+filepath.Join(root, "worker"), "CRITIC_WORKER_ID=w", "DATABASE_URL=")}
	procs := []*chaosProc{worker, consumer, api, broker}
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	broker.start(t)
	api.start(t)
	consumer.start(t)
	worker.start(t)

	cli := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Env = api.env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	var keys []string
	for i := range 4 {
		m := keyRe.FindStringSubmatch(cli("users", "create", "--name", fmt.Sprintf("chaos-%d", i)))
		require.NotNil(t, m)
		keys = append(keys, m[1])
	}
	base := filepath.Join(root, "base")
	cli("model", "init", "--arch", "qwen3", "--hidden", "32", "--layers", "1", "--heads", "2", "--kv-heads", "1",
		"--head-dim", "16", "--intermediate", "64", "--tokenizer", filepath.Join(pgtest.ModuleRoot(t), "gpuworker", "testdata", "tinytok"), "--out", base)

	client := &http.Client{Timeout: 20 * time.Second}
	call := func(method, path, key string, body []byte, ct string) (int, []byte) {
		req, err := http.NewRequest(method, apiURL+path, bytes.NewReader(body))
		if err != nil {
			return 0, nil
		}
		req.Header.Set("Authorization", "Bearer "+key)
		if body != nil {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	postJSON := func(path, key string, v any) (int, map[string]any) {
		raw, _ := json.Marshal(v)
		status, b := call("POST", path, key, raw, "application/json")
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return status, out
	}

	got := &acked{imports: map[string]string{}, annotations: map[string]string{}, otel: map[string]string{}, models: map[string]string{}}
	ctx, stopClients := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	run := func(fn func(n int)) {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				fn(n)
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	// Importer.
	run(func(n int) {
		key := keys[n%2]
		status, out := postJSON("/api/v1/rm/traces/import", key, map[string]any{"format": "stash",
			"data": fmt.Sprintf(`{"id":"imp-%d","steps":[{"role":"user","content":"question %d"},{"role":"assistant","content":"answer %d"}]}`, n, n, n)})
		if status != http.StatusOK {
			got.fail()
			return
		}
		got.add(got.imports, out["trace_ids"].([]any)[0].(string), key)
	})
	// Annotator: rates traces the importer was told about.
	pick := rand.New(rand.NewSource(seed + 1)) // its own: rand.Rand is not safe for two goroutines
	run(func(n int) {
		got.mu.Lock()
		var trace, key string
		for id, k := range got.imports {
			trace, key = id, k
			if pick.Intn(3) == 0 {
				break
			}
		}
		got.mu.Unlock()
		if trace == "" {
			return
		}
		status, out := postJSON("/api/v1/rm/traces/"+trace+"/annotations", key, map[string]any{"rating": []int{1, -1}[n%2], "comment": fmt.Sprintf("note %d", n)})
		if status != http.StatusOK {
			got.fail()
			return
		}
		got.add(got.annotations, out["id"].(string), trace)
	})
	// OTLP sender: one new trace per request.
	run(func(n int) {
		hex := fmt.Sprintf("%032x", 0xc4a05000000+n)
		status, _ := call("POST", "/api/v1/rm/otel/v1/traces", keys[2], otlpJSON(hex, "00000000000000e1",
			fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"otel question %d"}]}]`, n),
			`[{"role":"assistant","parts":[{"type":"text","content":"otel answer"}]}]`), "application/json")
		if status != http.StatusOK {
			got.fail()
			return
		}
		got.add(got.otel, hex, keys[2])
	})
	// Modeler: rated traces once, then a model request every few seconds.
	run(func(n int) {
		key := keys[3]
		if n == 0 {
			var ids []string
			for len(ids) < 4 && ctx.Err() == nil {
				i := len(ids)
				answer := map[bool]string{true: "Delivered; refund started within policy.", false: "Sure! Refund issued, no questions asked."}[i%2 == 0]
				status, out := postJSON("/api/v1/rm/traces/import", key, map[string]any{"format": "stash", "data": fmt.Sprintf(
					`{"id":"rated-%d","steps":[{"role":"user","content":"Refund order %d"},{"role":"assistant","content":"%s"}]}`, i, i, answer)})
				if status != http.StatusOK {
					time.Sleep(200 * time.Millisecond)
					continue
				}
				id := out["trace_ids"].([]any)[0].(string)
				for ctx.Err() == nil {
					status, ann := postJSON("/api/v1/rm/traces/"+id+"/annotations", key, map[string]any{"rating": map[bool]int{true: 1, false: -1}[i%2 == 0], "comment": fmt.Sprintf("rated %d", i)})
					if status == http.StatusOK {
						got.add(got.annotations, ann["id"].(string), id)
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				got.add(got.imports, id, key)
				ids = append(ids, id)
			}
			got.mu.Lock()
			got.models["traces"] = strings.Join(ids, ",")
			got.mu.Unlock()
			return
		}
		time.Sleep(4 * time.Second)
		got.mu.Lock()
		ids := strings.Split(got.models["traces"], ",")
		got.mu.Unlock()
		status, out := postJSON("/api/v1/rm/reward-models", key, map[string]any{"name": fmt.Sprintf("chaos-%d", n), "trace_ids": ids, "base_model": base, "epochs": 1})
		if status != http.StatusOK {
			got.fail()
			return
		}
		got.add(got.models, out["id"].(string), key)
	})

	// The chaos: kill -9 at random moments, restart after a random pause.
	targets := []*chaosProc{api, consumer, worker}
	kills, restarts := map[string]int{}, 0
	for range 7 {
		time.Sleep(time.Duration(2000+rng.Intn(3000)) * time.Millisecond)
		p := targets[rng.Intn(len(targets))]
		p.kill()
		kills[p.name]++
		time.Sleep(time.Duration(200+rng.Intn(1300)) * time.Millisecond)
		p.start(t)
		restarts++
	}
	time.Sleep(2 * time.Second)
	stopClients()
	wg.Wait()
	delete(got.models, "traces")

	pool, err := pg.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	defer pool.Close()
	q := func(sql string, args ...any) int {
		var n int
		require.NoError(t, pool.QueryRow(context.Background(), sql, args...).Scan(&n), sql)
		return n
	}
	// Let the read model catch up (a model acknowledged while it lagged
	// shows up only then), let every model finish (a killed worker's lease
	// expires and its attempt goes back to the queue for the restarted
	// worker; a third lost run fails it), stop the worker, and let the projections
	// drain: no more events, all applied.
	unapplied := func() int {
		return q(`SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM readmodel_applied a WHERE a.event_id = e.id)`)
	}
	drain := func() {
		// A group re-forms within seconds of a restart (the dead member is
		// dropped when the rebalance the restart starts completes, 5 s);
		// a minute without catching up is a stall, not a slow machine.
		deadline := time.Now().Add(60 * time.Second)
		for unapplied() > 0 {
			if time.Now().After(deadline) {
				var detail string
				_ = pool.QueryRow(context.Background(), `SELECT format('%s unapplied events, seq %s..%s, types %s; relay cursor %s; log max seq %s',
					count(*), min(seq), max(seq), string_agg(DISTINCT type, ','), (SELECT string_agg(name || '=' || seq, ',') FROM relay_cursor),
					(SELECT max(seq) FROM events))
					FROM events e WHERE NOT EXISTS (SELECT 1 FROM readmodel_applied a WHERE a.event_id = e.id)`).Scan(&detail)
				t.Fatalf("the read model never caught up with the log: %s", detail)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	drain()
	for deadline := time.Now().Add(90 * time.Second); q(`SELECT count(*) FROM rm_reward_models WHERE status IN ('queued', 'running')`) > 0; {
		if time.Now().After(deadline) {
			var detail string
			_ = pool.QueryRow(context.Background(), `SELECT string_agg(m.id || ' ' || m.status || ': ' || (SELECT string_agg(e.type || '@' || e.seq, ' ' ORDER BY e.seq)
				FROM events e WHERE e.stream = 'reward_model/' || m.id), E'\n') FROM rm_reward_models m WHERE m.status IN ('queued', 'running')`).Scan(&detail)
			var parked string // a parked event holds its account's later events
			_ = pool.QueryRow(context.Background(), `SELECT coalesce(string_agg(projection || ' parked ' || event_type || '@' || seq || ' of ' || owner_id || ': ' || error, E'\n'), 'none')
				FROM projection_parked`).Scan(&parked)
			t.Fatalf("models still queued or running:\n%s\nparked events: %s", detail, parked)
		}
		time.Sleep(200 * time.Millisecond)
	}
	worker.stop()
	drain()
	require.Zero(t, q(`SELECT count(*) FROM projection_parked`), "nothing was parked")

	// Every acknowledged write is there, once. (Each annotation carries a
	// comment: a reviewer's later rating of the same target takes the
	// rating over, and an earlier one with a comment stays as that comment.)
	for id := range got.imports {
		require.Equal(t, 2, q(`SELECT count(*) FROM rm_steps WHERE trace_id = $1`, id), "acknowledged import %s", id)
	}
	for id, trace := range got.annotations {
		require.Equal(t, 1, q(`SELECT count(*) FROM rm_annotations WHERE id = $1 AND trace_id = $2`, id, trace), "acknowledged annotation %s", id)
	}
	for hex := range got.otel {
		require.Equal(t, 2, q(`SELECT count(*) FROM rm_steps s JOIN rm_traces t ON t.id = s.trace_id WHERE t.external_id = $1`, hex), "acknowledged OTLP trace %s", hex)
	}
	for id := range got.models {
		require.Equal(t, 1, q(`SELECT count(*) FROM rm_reward_models WHERE id = $1 AND status IN ('succeeded', 'failed')`, id), "acknowledged model %s", id)
	}
	require.Zero(t, q(`SELECT count(*) FROM (SELECT owner_id, external_id FROM rm_traces GROUP BY 1, 2 HAVING count(*) > 1) d`), "a trace stored twice")
	require.Zero(t, q(`SELECT count(*) FROM (SELECT trace_id, idx FROM rm_steps GROUP BY 1, 2 HAVING count(*) > 1) d`), "a step stored twice")
	require.Zero(t, q(`SELECT count(*) FROM (SELECT stream FROM events WHERE type = 'trace.imported.v1' GROUP BY stream HAVING count(*) > 1) d`), "an import appended twice")
	wins := map[string]int{} // reward_model payloads are sealed: opened here
	for _, p := range openedPayloadsIn(t, pool, filepath.Join(root, "master_key"), filepath.Join(root, "blobs"), "reward_model.training_succeeded.v1") {
		wins[fmt.Sprint(p["model_id"], "/", p["attempt"])]++
	}
	for attempt, n := range wins {
		require.Equal(t, 1, n, "attempt %s succeeded twice", attempt)
	}
	require.Equal(t, q(`SELECT count(*) FROM events`), q(`SELECT count(*) FROM readmodel_applied`), "every event applied exactly once")

	// The read model equals a replay of the log.
	before := dumpTables(t, pool)
	cli("replay", "readmodel")
	require.Equal(t, before, dumpTables(t, pool), "the read model equals a replay of the log")

	var killed []string
	total := 0
	for _, p := range targets {
		killed = append(killed, fmt.Sprintf("%s %d", p.name, kills[p.name]))
		total += kills[p.name]
	}
	writes := len(got.imports) + len(got.annotations) + len(got.otel) + len(got.models)
	// How often a consumer group had to be joined again tells a broker
	// stall (many, for minutes) from a slow machine (a few per kill).
	logs.mu.Lock()
	joinFailures := strings.Count(logBuf.String(), "Failed to join group")
	logs.mu.Unlock()
	require.NotZero(t, len(got.imports))
	require.NotZero(t, len(got.annotations))
	require.NotZero(t, len(got.otel))
	testNote("chaos: survived %d acknowledged writes (%d imports, %d annotations, %d OTLP traces, %d models; %d writes unacknowledged), "+
		"%d kill -9s (%s), %d restarts, %d failed group joins; seed %d", writes, len(got.imports), len(got.annotations), len(got.otel), len(got.models), got.failures,
		total, strings.Join(killed, ", "), restarts, joinFailures, seed)
}

// dumpTables is dumpReadModel over a pool.
func dumpTables(t *testing.T, pool *pgxpool.Pool) map[string][]string {
	return dumpReadModel(t, &instance{pool: pool})
}
