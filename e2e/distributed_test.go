package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/pg"
	"github.com/criticml/critic/platform/pg/pgtest"
)

// distLedger is what the clients of TestDistributed were told, per logical
// write (a marker unique to it).
type distLedger struct {
	mu          sync.Mutex
	imports     map[string]string // marker → trace id acknowledged
	annotations map[string]string // marker → annotation id acknowledged
	models      map[string]string // model name → model id acknowledged
	interrupted map[string]bool   // stored, but its instance died before answering
	gaveUp      int               // writes never acknowledged within a minute
	unavailable int               // 503 `unavailable` answers (a stored write told to retry)
	retries     int
}

// distMember is one process of TestDistributed the schedule stops and
// starts; a worker gets a fresh CRITIC_WORKER_ID per incarnation so the
// idle-worker monitor tells a dead incarnation's job from the live one's.
type distMember struct {
	*chaosProc
	worker bool
	base   []string // env without CRITIC_WORKER_ID

	mu      sync.Mutex
	gen     int
	id      string
	up      bool
	upSince time.Time
}

func (m *distMember) start(t *testing.T) {
	m.mu.Lock()
	if m.worker {
		m.gen++
		m.id = fmt.Sprintf("%s-%d", m.name, m.gen)
		m.env = append(append([]string{}, m.base...), "CRITIC_WORKER_ID="+m.id)
	}
	m.mu.Unlock()
	m.chaosProc.start(t)
	m.mu.Lock()
	m.up, m.upSince = true, time.Now()
	m.mu.Unlock()
}

func (m *distMember) down() {
	m.mu.Lock()
	m.up = false
	m.mu.Unlock()
}

// alive is the live incarnation's worker id once it has been up for grace
// (time to greet the API and make its first claim).
func (m *distMember) alive(grace time.Duration) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id, m.up && time.Since(m.upSince) >= grace
}

// TestDistributed is issue 19's combined scenario, on loopback: one
// PostgreSQL, `critic broker --listen`, two `critic serve` instances and two
// `critic worker` processes (given both API URLs). Clients import traces,
// annotate them and request reward models through both instances, each write
// under one Idempotency-Key, retrying on errors and 503s on the other
// instance. The schedule kill -9s and SIGTERMs every process once each —
// each API, each worker and the broker — in random order at random moments,
// and once starts a third instance with a live instance's id (it must be
// refused). After every step (clients paused): every acknowledged write is
// stored once and nothing twice, and POST /query on every instance equals
// the read model (503 snapshot_catching_up allowed until then). Throughout:
// no claimable model waits while a live worker is idle. At the end: every
// requested model succeeded (or failed after three lost runs with the
// readable reason), no stored write was answered 503, every event was
// applied once, the read model equals a replay of the log, and no process
// logged an ERROR (a query's 503 while its snapshot catches up aside).
// CRITIC_CHAOS_SEED repeats the schedule.
func TestDistributed(t *testing.T) {
	if os.Getenv("CRITIC_CHAOS") == "" {
		t.Skip("set CRITIC_CHAOS=1 (make distributed): kills and restarts APIs, workers and the broker for about two minutes")
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("CRITIC_CHAOS_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
	}
	rng := rand.New(rand.NewSource(seed))
	t.Logf("distributed seed %d (CRITIC_CHAOS_SEED=%d repeats this schedule)", seed, seed)
	began := time.Now()

	bin := criticBin(t)
	dbURL := pgtest.NewDatabase(t)
	root := t.TempDir()
	var logBuf bytes.Buffer
	logs := &lockedWriter{mu: &sync.Mutex{}, w: &logBuf}
	defer func() {
		if t.Failed() {
			logs.mu.Lock()
			t.Logf("process logs:\n%s", logBuf.String())
			logs.mu.Unlock()
			t.Logf("CRITIC_CHAOS_SEED=%d repeats this schedule", seed)
		}
	}()

	kafkaPort := freePort(t)
	common := append(os.Environ(), "DATABASE_URL="+dbURL, fmt.Sprintf("KAFKA_BROKERS=127.0.0.1:%d", kafkaPort),
		"BLOB_URL=file://"+filepath.Join(root, "blobs"), sharedMasterKey(t, root), "CRITIC_WORKER_TOKEN=dist-token", "CRITIC_INSTANCE_ID=",
		"ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "CRITIC_STEP_LABEL_MODEL=off")
	broker := &distMember{chaosProc: &chaosProc{name: "broker", bin: bin, logs: logs, ready: "broker listening", env: common,
		args: []string{"broker", "--listen", fmt.Sprintf("127.0.0.1:%d", kafkaPort), "--data-dir", filepath.Join(root, "kafka")}}}
	var apis []*distMember
	var urls []string
	serveEnv := func(name string, port int) []string {
		return append(append([]string{}, common...), fmt.Sprintf("CRITIC_ADDR=127.0.0.1:%d", port),
			"CRITIC_DATA_DIR="+filepath.Join(root, name), "CRITIC_WORKER_LEASE=3s")
	}
	for _, name := range []string{"api-a", "api-b"} {
		port := freePort(t)
		urls = append(urls, fmt.Sprintf("http://127.0.0.1:%d", port))
		apis = append(apis, &distMember{chaosProc: &chaosProc{name: name, bin: bin, args: []string{"serve"}, logs: logs,
			ready: "listening on", env: serveEnv(name, port)}})
	}
	var workers []*distMember
	for _, name := range []string{"wa", "wb"} {
		workers = append(workers, &distMember{worker: true, chaosProc: &chaosProc{name: name, bin: bin, args: []string{"worker"}, logs: logs,
			ready: "Critic worker"}, base: append(append([]string{}, common...), "CRITIC_API_URL="+strings.Join(urls, ","),
			"CRITIC_DATA_DIR="+filepath.Join(root, name), "DATABASE_URL=", "CRITIC_WORKER_METRICS_ADDR=off")})
	}
	members := append(append(append([]*distMember{}, workers...), apis...), broker)
	defer func() {
		for _, m := range members {
			m.stop()
		}
	}()
	broker.start(t)
	for _, m := range apis {
		m.start(t)
	}
	for _, m := range workers {
		m.start(t)
	}
	instanceID := func(api *distMember) string {
		raw, err := os.ReadFile(filepath.Join(root, api.name, "instance-id"))
		require.NoError(t, err)
		return strings.TrimSpace(string(raw))
	}
	ids := []string{instanceID(apis[0]), instanceID(apis[1])}
	require.NotEqual(t, ids[0], ids[1], "each instance generated an id of its own")

	cli := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Env = apis[0].env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	var keys []string
	for i := range 2 {
		m := keyRe.FindStringSubmatch(cli("users", "create", "--name", fmt.Sprintf("dist-%d", i)))
		require.NotNil(t, m)
		keys = append(keys, m[1])
	}
	base := filepath.Join(root, "base")
	// The size TestDistributedWorkers trains: a run lasts long enough for a
	// kill to land mid-training and for both workers to be busy at once.
	cli("model", "init", "--arch", "qwen3", "--hidden", "64", "--layers", "2", "--heads", "2", "--kv-heads", "1",
		"--head-dim", "16", "--intermediate", "64", "--tokenizer", filepath.Join(pgtest.ModuleRoot(t), "gpuworker", "testdata", "tinytok"), "--out", base)
	pool, err := pg.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	defer pool.Close()

	send := keyedSender(15 * time.Second)
	got := &distLedger{imports: map[string]string{}, annotations: map[string]string{}, models: map[string]string{}, interrupted: map[string]bool{}}
	// write sends one logical write under one key until it is answered for
	// good, moving to the other instance on errors and 503s.
	write := func(first int, path, key, marker string, v any) map[string]any {
		raw, _ := json.Marshal(v)
		idem := uuid.NewString()
		start := time.Now()
		for attempt := 0; time.Since(start) < 60*time.Second; attempt++ {
			if attempt > 0 {
				got.mu.Lock()
				got.retries++
				got.mu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
			status, out, err := send("POST", urls[(first+attempt)%len(urls)], path, key, idem, raw)
			code, _ := out["code"].(string)
			switch {
			case err == nil && status == http.StatusOK:
				return out
			case status == http.StatusServiceUnavailable && code == "unavailable":
				got.mu.Lock()
				got.unavailable++
				got.mu.Unlock()
			case status == http.StatusConflict && code == "idempotent_request_interrupted":
				got.mu.Lock()
				got.interrupted[marker] = true
				got.mu.Unlock()
				return nil
			case err == nil && status < 500 && status != http.StatusConflict:
				t.Errorf("%s %s: %d %v", path, marker, status, out)
				return nil
			}
		}
		got.mu.Lock()
		got.gaveUp++
		got.mu.Unlock()
		return nil
	}

	// The clients. Each write holds gate's read lock, so a check takes the
	// write lock to see a quiet system (the workers keep training).
	var gate sync.RWMutex
	ctx, stopClients := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	run := func(pause time.Duration, fn func(n int)) {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				gate.RLock()
				fn(n)
				gate.RUnlock()
				time.Sleep(pause)
			}
		})
	}
	// Importer: traces without an external id, so a write applied twice
	// would be a second trace with the same marker.
	run(50*time.Millisecond, func(n int) {
		marker := fmt.Sprintf("imp %d", n)
		out := write(n, "/api/v1/rm/traces/import", keys[0], marker, map[string]any{"format": "stash",
			"data": fmt.Sprintf(`{"steps":[{"role":"user","content":%q},{"role":"assistant","content":"answer"}]}`, marker)})
		if out == nil {
			return
		}
		got.mu.Lock()
		got.imports[marker] = out["trace_ids"].([]any)[0].(string)
		got.mu.Unlock()
	})
	// Annotator: rates the traces the importer was told about.
	run(50*time.Millisecond, func(n int) {
		got.mu.Lock()
		var trace string
		for _, id := range got.imports {
			trace = id
			break
		}
		got.mu.Unlock()
		if trace == "" {
			time.Sleep(100 * time.Millisecond)
			return
		}
		marker := fmt.Sprintf("note %d", n)
		out := write(n, "/api/v1/rm/traces/"+trace+"/annotations", keys[0], marker, map[string]any{"rating": []int{1, -1}[n%2], "comment": marker})
		if out == nil {
			return
		}
		got.mu.Lock()
		got.annotations[marker] = out["id"].(string)
		got.mu.Unlock()
	})
	// Modeler: four rated traces once, then two model requests every few
	// seconds (one through each instance), so both workers have work.
	var rated []string
	run(4*time.Second, func(n int) {
		if n == 0 {
			for i := 0; len(rated) < 4 && ctx.Err() == nil; i++ {
				answer := map[bool]string{true: "Delivered; refund started within policy.", false: "Sure! Refund issued, no questions asked."}[i%2 == 0]
				out := write(i, "/api/v1/rm/traces/import", keys[1], fmt.Sprintf("rated %d", i), map[string]any{"format": "stash", "data": fmt.Sprintf(
					`{"id":"rated-%d","steps":[{"role":"user","content":"Refund order %d"},{"role":"assistant","content":%q}]}`, i, i, answer)})
				if out == nil {
					continue
				}
				id := out["trace_ids"].([]any)[0].(string)
				if write(i, "/api/v1/rm/traces/"+id+"/annotations", keys[1], fmt.Sprintf("rating %d", i),
					map[string]any{"rating": []int{1, -1}[i%2]}) != nil {
					rated = append(rated, id)
				}
			}
			return
		}
		if len(rated) < 4 {
			return
		}
		for i := range 2 {
			name := fmt.Sprintf("model %d-%d", n, i)
			out := write(i, "/api/v1/rm/reward-models", keys[1], name, map[string]any{"name": name, "trace_ids": rated, "base_model": base, "epochs": 12})
			if out == nil {
				continue
			}
			got.mu.Lock()
			got.models[name] = out["id"].(string)
			got.mu.Unlock()
		}
	})

	// The monitor: a claimable model (queued with its dataset) and a live,
	// idle worker at once for longer than starveLimit is a violation.
	const grace, starveLimit = 5 * time.Second, 10 * time.Second
	var (
		monMu      sync.Mutex
		violations []string
		starved    time.Time
		maxBusy    int
	)
	monCtx, stopMon := context.WithCancel(context.Background())
	monDone := make(chan struct{})
	go func() {
		defer close(monDone)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for monCtx.Err() == nil {
			select {
			case <-monCtx.Done():
				return
			case <-tick.C:
			}
			var queued int
			holders := map[string]bool{}
			rows, err := pool.Query(monCtx, `SELECT status, dataset_key IS NOT NULL, coalesce(worker_id, '') FROM rm_reward_models`)
			if err != nil {
				continue
			}
			for rows.Next() {
				var status, worker string
				var built bool
				if rows.Scan(&status, &built, &worker) != nil {
					continue
				}
				switch {
				case status == "queued" && built:
					queued++
				case status == "running":
					holders[worker] = true
				}
			}
			rows.Close()
			var idle []string
			busy := 0
			for _, w := range workers {
				id, ok := w.alive(grace)
				switch {
				case holders[id]:
					busy++
				case ok:
					idle = append(idle, id)
				}
			}
			monMu.Lock()
			maxBusy = max(maxBusy, busy)
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

	q := func(sql string, args ...any) int {
		var n int
		require.NoError(t, pool.QueryRow(context.Background(), sql, args...).Scan(&n), sql)
		return n
	}
	unapplied := func() int {
		return q(`SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM readmodel_applied a WHERE a.event_id = e.id)`)
	}
	drain := func(step string) {
		for deadline := time.Now().Add(60 * time.Second); unapplied() > 0; {
			require.False(t, time.Now().After(deadline), "%s: the read model never caught up with the log", step)
			time.Sleep(200 * time.Millisecond)
		}
	}
	// ledger: every acknowledged write is stored once; nothing is stored
	// twice (a retried write included).
	ledger := func(step string) {
		got.mu.Lock()
		defer got.mu.Unlock()
		stored := map[string][]string{}
		rows, err := pool.Query(context.Background(), `SELECT content, array_agg(DISTINCT trace_id::text) FROM rm_steps WHERE content LIKE 'imp %' GROUP BY 1`)
		require.NoError(t, err)
		for rows.Next() {
			var c string
			var ids []string
			require.NoError(t, rows.Scan(&c, &ids))
			stored[c] = ids
		}
		rows.Close()
		for marker, ids := range stored {
			require.Len(t, ids, 1, "%s: import %q stored once", step, marker)
		}
		for marker, id := range got.imports {
			require.Equal(t, []string{id}, stored[marker], "%s: acknowledged import %q", step, marker)
		}
		notes := map[string][]string{}
		rows, err = pool.Query(context.Background(), `SELECT comment, array_agg(id::text) FROM rm_annotations WHERE comment LIKE 'note %' GROUP BY 1`)
		require.NoError(t, err)
		for rows.Next() {
			var c string
			var ids []string
			require.NoError(t, rows.Scan(&c, &ids))
			notes[c] = ids
		}
		rows.Close()
		for marker, ids := range notes {
			require.Len(t, ids, 1, "%s: annotation %q stored once", step, marker)
		}
		for marker, id := range got.annotations {
			require.Equal(t, []string{id}, notes[marker], "%s: acknowledged annotation %q", step, marker)
		}
		require.Zero(t, q(`SELECT count(*) FROM (SELECT name FROM rm_reward_models GROUP BY 1 HAVING count(*) > 1) d`), "%s: a model requested twice", step)
		for name, id := range got.models {
			require.Equal(t, 1, q(`SELECT count(*) FROM rm_reward_models WHERE id = $1 AND name = $2`, id, name), "%s: acknowledged model %q", step, name)
		}
		for marker := range got.interrupted {
			require.LessOrEqual(t, q(`SELECT count(DISTINCT trace_id) FROM rm_steps WHERE content = $1`, marker)+
				q(`SELECT count(*) FROM rm_annotations WHERE comment = $1`, marker)+
				q(`SELECT count(*) FROM rm_reward_models WHERE name = $1`, marker), 1, "%s: interrupted write %q stored at most once", step, marker)
		}
	}
	// sqlSame: POST /query on every live instance answers, per account,
	// what the read model holds (traces, their step counts, annotations and
	// ratings). 503 snapshot_catching_up is allowed
	// until it has caught up; a wrong answer is retried only while the read
	// model itself moves (the workers' events), so a snapshot that stays
	// behind fails.
	const duckView = `SELECT (SELECT count(*) FROM traces) || ' ' || coalesce(md5(string_agg(line, ',' ORDER BY line)), '') FROM (
		SELECT t.id || ':' || t.step_count || ':' || count(a.id) || ':' || coalesce(sum(a.rating), 0) AS line
		FROM traces t LEFT JOIN annotations a ON a.trace_id = t.id GROUP BY t.id, t.step_count
)`
	const pgView = `SELECT (SELECT count(*) FROM rm_traces WHERE owner_id = u.id) || ' ' || coalesce(md5(string_agg(line, ',' ORDER BY line COLLATE "C")), '') FROM (
		SELECT t.id::text || ':' || t.step_count || ':' || count(a.id) || ':' || coalesce(sum(a.rating), 0) AS line
		FROM rm_traces t LEFT JOIN rm_annotations a ON a.trace_id = t.id WHERE t.owner_id = u.id GROUP BY t.id, t.step_count) v`
	readModel := func(user string) string {
		var s string
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT (`+pgView+`) FROM rm_users u WHERE u.name = $1`, user).Scan(&s))
		return s
	}
	sqlSame := func(step string) {
		for i, url := range urls {
			for k, key := range keys {
				var status int
				var out map[string]any
				var answer, want string
				ok := false
				for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
					status, out, err = send("POST", url, "/api/v1/rm/query", key, "", []byte(fmt.Sprintf(`{"sql":%q}`, duckView)))
					if err != nil || status == http.StatusServiceUnavailable {
						require.True(t, err != nil || out["code"] == "snapshot_catching_up", "%s: %s answered %d %v", step, apis[i].name, status, out)
						continue
					}
					require.Equal(t, http.StatusOK, status, "%s: POST /query on %s: %v", step, apis[i].name, out)
					rows, _ := out["rows"].([]any)
					require.Len(t, rows, 1, "%v", out)
					answer = fmt.Sprint(rows[0].([]any)[0])
					if want = readModel(fmt.Sprintf("dist-%d", k)); answer == want {
						ok = true
						break
					}
				}
				require.True(t, ok, "%s: POST /query on %s answered %q (%d %v), the read model holds %q", step, apis[i].name, answer, status, out, want)
			}
		}
	}
	check := func(step string) {
		gate.Lock()
		defer gate.Unlock()
		drain(step)
		ledger(step)
		sqlSame(step)
		monMu.Lock()
		require.Empty(t, violations, "%s: a claimable model waited while a worker was idle", step)
		monMu.Unlock()
	}

	// The schedule: every process kill -9'd once and SIGTERMed once, and a
	// duplicate instance started once, in random order.
	type blow struct {
		who  *distMember
		kill bool
		dup  bool
	}
	var schedule []blow
	for _, m := range members {
		schedule = append(schedule, blow{who: m, kill: true}, blow{who: m})
	}
	schedule = append(schedule, blow{dup: true})
	rng.Shuffle(len(schedule), func(i, j int) { schedule[i], schedule[j] = schedule[j], schedule[i] })
	// trainingOn: the worker's live incarnation holds a running model.
	trainingOn := func(w *distMember) bool {
		id, _ := w.alive(0)
		return q(`SELECT count(*) FROM rm_reward_models WHERE status = 'running' AND worker_id = $1`, id) > 0
	}
	time.Sleep(3 * time.Second)
	check("start")
	var done []string
	for _, b := range schedule {
		time.Sleep(time.Duration(1500+rng.Intn(3000)) * time.Millisecond)
		var step, during string
		if !b.dup && b.who.worker {
			// A worker is hit while it trains when it gets work within a
			// few seconds, so hand-back and lease expiry both happen.
			for deadline := time.Now().Add(6 * time.Second); time.Now().Before(deadline) && !trainingOn(b.who); {
				time.Sleep(50 * time.Millisecond)
			}
			if trainingOn(b.who) {
				during = " (training)"
			}
		}
		switch {
		case b.dup:
			victim := rng.Intn(len(apis))
			step = "duplicate of " + apis[victim].name
			env := append(serveEnv("dup", freePort(t)), "CRITIC_INSTANCE_ID="+ids[victim])
			cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			cmd := exec.CommandContext(cctx, bin, "serve")
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			cancel()
			require.Error(t, err, "a duplicate instance id must not start: %s", out)
			require.Contains(t, string(out), fmt.Sprintf("instance id %q is in use by the instance on host", ids[victim]))
			require.NotContains(t, string(out), "listening on")
		case b.kill:
			step = "kill -9 " + b.who.name
			b.who.down()
			b.who.kill()
		default:
			step = "SIGTERM " + b.who.name
			b.who.down()
			sigterm(b.who.chaosProc)
		}
		if !b.dup {
			time.Sleep(time.Duration(300+rng.Intn(2000)) * time.Millisecond)
			b.who.start(t)
		}
		step += during
		t.Logf("%s: %s", time.Since(began).Round(time.Second), step)
		done = append(done, step)
		check(step)
	}
	stopClients()
	wg.Wait()

	// Every model finishes: succeeded, or failed after three lost runs.
	for deadline := time.Now().Add(3 * time.Minute); q(`SELECT count(*) FROM rm_reward_models WHERE status IN ('queued', 'running')`) > 0; {
		if time.Now().After(deadline) {
			var detail string
			_ = pool.QueryRow(context.Background(), `SELECT string_agg(m.name || ' ' || m.status || ': ' || (SELECT string_agg(e.type || '@' || e.seq, ' ' ORDER BY e.seq)
				FROM events e WHERE e.stream = 'reward_model/' || m.id), E'\n') FROM rm_reward_models m WHERE m.status IN ('queued', 'running')`).Scan(&detail)
			t.Fatalf("models still queued or running:\n%s", detail)
		}
		time.Sleep(250 * time.Millisecond)
	}
	stopMon()
	<-monDone
	for _, w := range workers {
		w.down()
		w.stop()
	}
	check("end")
	monMu.Lock()
	require.Equal(t, 2, maxBusy, "both workers trained at once at some point")
	monMu.Unlock()

	succeeded, failed := 0, 0
	for name, id := range got.models {
		var status, errText string
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT status, coalesce(error, '') FROM rm_reward_models WHERE id = $1`, id).Scan(&status, &errText))
		wins := q(`SELECT count(*) FROM events WHERE type = 'reward_model.training_succeeded.v1' AND stream = 'reward_model/' || $1`, id)
		switch status {
		case "succeeded":
			succeeded++
			require.Equal(t, 1, wins, "model %q was trained to success once", name)
		case "failed":
			failed++
			require.Zero(t, wins)
			first, _, _ := strings.Cut(errText, "\n")
			require.Equal(t, "training failed: the worker was lost 3 times (lease expired each time); retry the model once the workers are healthy", first,
				"model %q: the only way a model fails here is three lost runs", name)
		default:
			t.Fatalf("model %q ended %s", name, status)
		}
	}
	require.Positive(t, succeeded)
	require.Zero(t, q(`SELECT count(*) FROM projection_parked`), "nothing was parked")
	require.Equal(t, q(`SELECT count(*) FROM events`), q(`SELECT count(*) FROM readmodel_applied`), "every event applied exactly once")
	require.Zero(t, got.unavailable, "a stored write was answered 503")
	require.NotZero(t, len(got.imports))
	require.NotZero(t, len(got.annotations))

	// The read model equals a replay of the log.
	before := dumpTables(t, pool)
	cli("replay", "readmodel")
	require.Equal(t, before, dumpTables(t, pool), "the read model equals a replay of the log")

	// Every step is routine for a distributed deployment: nothing is logged
	// at ERROR but the 503 of a query asked while its snapshot caught up.
	logs.mu.Lock()
	text := logBuf.String()
	logs.mu.Unlock()
	for line := range strings.SplitSeq(text, "\n") {
		if strings.Contains(line, "level=ERROR") && !strings.Contains(line, `route="POST /api/v1/rm/query" status=503`) {
			t.Errorf("logged as an error: %s", line)
		}
	}

	requeued := q(`SELECT count(*) FROM events WHERE type = 'reward_model.training_requeued.v1'`)
	require.Positive(t, requeued, "a worker stopped or killed mid-training handed its run back or lost it")
	testNote("distributed: %d acknowledged writes (%d imports, %d annotations, %d models: %d succeeded, %d failed after 3 lost runs), "+
		"%d retries, %d interrupted, %d given up, %d training requeues; %s; %s; seed %d",
		len(got.imports)+len(got.annotations)+len(got.models), len(got.imports), len(got.annotations), len(got.models), succeeded, failed,
		got.retries, len(got.interrupted), got.gaveUp, requeued, strings.Join(done, ", "), time.Since(began).Round(time.Second), seed)
}
