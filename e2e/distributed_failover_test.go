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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/pg"
	"github.com/criticml/critic/platform/pg/pgtest"
)

// failoverLedger is what the clients of TestDistributedFailover were told,
// per logical write (a marker unique to it).
type failoverLedger struct {
	mu          sync.Mutex
	imports     map[string]string // marker → trace id acknowledged
	annotations map[string]string // marker → annotation id acknowledged
	models      map[string]string // marker → model id acknowledged
	interrupted map[string]bool   // marker → "stored, but its instance died before answering"
	gaveUp      map[string]bool   // marker → never acknowledged
	unavailable int               // 503 `unavailable` answers (a stored write told to retry)
	staleReads  []string          // a GET on the other instance right after an acknowledged POST that missed it
	retries     int               // attempts after the first, over all writes
	maxStall    time.Duration     // longest time one write took to be acknowledged, retries included
}

// TestDistributedFailover: two `critic serve` instances share one
// PostgreSQL and one broker; clients write through both with an
// Idempotency-Key per write, retrying on errors and 503s (on the other
// instance), while the test kill -9s and SIGTERMs each instance in turn at
// random moments and restarts it. Afterwards: every acknowledged write is
// stored once, no write is stored twice (retries included), a write stored
// but answered by a dying instance is stored once, no stored write was
// answered 503, a GET right after an acknowledged POST on the other instance
// saw it, the read model equals a replay of the log, and the logs name each
// move of the relay and of the projections' partitions with the instance.
// CRITIC_CHAOS_SEED repeats the schedule.
func TestDistributedFailover(t *testing.T) {
	if os.Getenv("CRITIC_CHAOS") == "" {
		t.Skip("set CRITIC_CHAOS=1 (make failover): kills and restarts API instances for about a minute")
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("CRITIC_CHAOS_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
	}
	rng := rand.New(rand.NewSource(seed))
	t.Logf("failover seed %d (CRITIC_CHAOS_SEED=%d repeats this schedule)", seed, seed)

	bin := criticBin(t)
	dbURL := pgtest.NewDatabase(t)
	root := t.TempDir()
	var logBuf bytes.Buffer
	logs := &lockedWriter{mu: &sync.Mutex{}, w: &logBuf}
	logText := func() string {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		return logBuf.String()
	}
	defer func() {
		if t.Failed() || os.Getenv("CRITIC_FAILOVER_SHOW_LOGS") != "" {
			t.Logf("process logs:\n%s", logText())
		}
	}()
	kafkaPort := freePort(t)
	common := append(os.Environ(), "DATABASE_URL="+dbURL, fmt.Sprintf("KAFKA_BROKERS=127.0.0.1:%d", kafkaPort),
		"BLOB_URL=file://"+filepath.Join(root, "blobs"), sharedMasterKey(t, root), "CRITIC_WORKER_TOKEN=failover-token",
		"ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "CRITIC_STEP_LABEL_MODEL=off")
	broker := &chaosProc{name: "broker", bin: bin, args: []string{"broker", "--port", strconv.Itoa(kafkaPort), "--data-dir", filepath.Join(root, "kafka")},
		env: common, ready: "broker listening", logs: logs}
	var apis []*chaosProc
	var urls []string
	for _, id := range []string{"a", "b"} {
		port := freePort(t)
		urls = append(urls, fmt.Sprintf("http://127.0.0.1:%d", port))
		apis = append(apis, &chaosProc{name: "api-" + id, bin: bin, args: []string{"serve"}, logs: logs, ready: "listening on",
			env: append(append([]string{}, common...), fmt.Sprintf("CRITIC_ADDR=127.0.0.1:%d", port),
				"CRITIC_DATA_DIR="+filepath.Join(root, id), "CRITIC_INSTANCE_ID="+id)})
	}
	procs := append(append([]*chaosProc{}, apis...), broker)
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	broker.start(t)
	for _, a := range apis {
		a.start(t)
	}

	cli := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Env = apis[0].env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	var keys []string
	for i := range 3 {
		m := keyRe.FindStringSubmatch(cli("users", "create", "--name", fmt.Sprintf("failover-%d", i)))
		require.NotNil(t, m)
		keys = append(keys, m[1])
	}
	base := filepath.Join(root, "base")
	cli("model", "init", "--arch", "qwen3", "--hidden", "32", "--layers", "1", "--heads", "2", "--kv-heads", "1",
		"--head-dim", "16", "--intermediate", "64", "--tokenizer", filepath.Join(pgtest.ModuleRoot(t), "gpuworker", "testdata", "tinytok"), "--out", base)

	send := keyedSender(15 * time.Second)
	got := &failoverLedger{imports: map[string]string{}, annotations: map[string]string{}, models: map[string]string{},
		interrupted: map[string]bool{}, gaveUp: map[string]bool{}}
	// write sends one logical write under one key until it is answered for
	// good, alternating instances on errors; it returns the answer and the
	// index of the instance that gave it (-1: none).
	write := func(first int, path, key, marker string, v any) (map[string]any, int) {
		raw, _ := json.Marshal(v)
		idem := uuid.NewString()
		start := time.Now()
		defer func() {
			got.mu.Lock()
			got.maxStall = max(got.maxStall, time.Since(start))
			got.mu.Unlock()
		}()
		for attempt := 0; time.Since(start) < 60*time.Second; attempt++ {
			if attempt > 0 {
				got.mu.Lock()
				got.retries++
				got.mu.Unlock()
			}
			i := (first + attempt) % len(urls)
			status, out, err := send("POST", urls[i], path, key, idem, raw)
			code, _ := out["code"].(string)
			switch {
			case err == nil && status == http.StatusOK:
				return out, i
			case status == http.StatusServiceUnavailable && code == "unavailable":
				got.mu.Lock()
				got.unavailable++
				got.mu.Unlock()
			case status == http.StatusConflict && code == "idempotent_request_interrupted":
				got.mu.Lock()
				got.interrupted[marker] = true
				got.mu.Unlock()
				return nil, -1
			case err == nil && status < 500 && status != http.StatusConflict:
				t.Errorf("%s %s: %d %v", path, marker, status, out)
				return nil, -1
			}
			time.Sleep(100 * time.Millisecond)
		}
		got.mu.Lock()
		got.gaveUp[marker] = true
		got.mu.Unlock()
		return nil, -1
	}
	// readBack GETs what was just acknowledged on the other instance: the
	// read model is shared, so read-your-writes holds across instances. An
	// instance that is down is no miss.
	readBack := func(answeredBy int, path, key, marker string) {
		other := (answeredBy + 1) % len(urls)
		status, _, err := send("GET", urls[other], path, key, "", nil)
		if err != nil || status >= 500 {
			return
		}
		if status != http.StatusOK {
			got.mu.Lock()
			got.staleReads = append(got.staleReads, fmt.Sprintf("%s (%s): %d", marker, path, status))
			got.mu.Unlock()
		}
	}

	ctx, stopClients := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	run := func(fn func(n int)) {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				fn(n)
				time.Sleep(30 * time.Millisecond)
			}
		})
	}
	// Importers: traces without an external id, so a write applied twice
	// would be a second trace.
	for w := range 2 {
		run(func(n int) {
			marker := fmt.Sprintf("import %d-%d", w, n)
			key := keys[w]
			out, by := write(n+w, "/api/v1/rm/traces/import", key, marker, map[string]any{"format": "stash",
				"data": fmt.Sprintf(`{"steps":[{"role":"user","content":%q},{"role":"assistant","content":"answer"}]}`, marker)})
			if out == nil {
				return
			}
			id := out["trace_ids"].([]any)[0].(string)
			got.mu.Lock()
			got.imports[marker] = id
			got.mu.Unlock()
			readBack(by, "/api/v1/rm/traces/"+id, key, marker)
		})
	}
	// Annotator: rates traces the importers were told about.
	run(func(n int) {
		got.mu.Lock()
		var trace, key string
		for m, id := range got.imports {
			trace, key = id, keys[0]
			if strings.HasPrefix(m, "import 1-") {
				key = keys[1]
			}
			break
		}
		got.mu.Unlock()
		if trace == "" {
			time.Sleep(100 * time.Millisecond)
			return
		}
		marker := fmt.Sprintf("note %d", n)
		out, _ := write(n, "/api/v1/rm/traces/"+trace+"/annotations", key, marker, map[string]any{"rating": []int{1, -1}[n%2], "comment": marker})
		if out == nil {
			return
		}
		got.mu.Lock()
		got.annotations[marker] = out["id"].(string)
		got.mu.Unlock()
	})
	// Modeler: two rated traces once, then a model request every second,
	// read back on the other instance at once.
	run(func(n int) {
		key := keys[2]
		if n == 0 {
			var ids []string
			for i := 0; i < 2 && ctx.Err() == nil; i++ {
				out, _ := write(i, "/api/v1/rm/traces/import", key, fmt.Sprintf("rated %d", i), map[string]any{"format": "stash",
					"data": fmt.Sprintf(`{"steps":[{"role":"user","content":"Refund order %d"},{"role":"assistant","content":"answer %d"}]}`, i, i)})
				if out == nil {
					continue
				}
				id := out["trace_ids"].([]any)[0].(string)
				if ann, _ := write(i, "/api/v1/rm/traces/"+id+"/annotations", key, fmt.Sprintf("rating %d", i), map[string]any{"rating": []int{1, -1}[i]}); ann == nil {
					continue
				}
				ids = append(ids, id)
			}
			got.mu.Lock()
			got.models["traces"] = strings.Join(ids, ",")
			got.mu.Unlock()
			return
		}
		time.Sleep(time.Second)
		got.mu.Lock()
		ids := strings.Split(got.models["traces"], ",")
		got.mu.Unlock()
		if len(ids) < 2 {
			return
		}
		marker := fmt.Sprintf("model %d", n)
		out, by := write(n, "/api/v1/rm/reward-models", key, marker, map[string]any{"name": marker, "trace_ids": ids, "base_model": base, "epochs": 1})
		if out == nil {
			return
		}
		id := out["id"].(string)
		got.mu.Lock()
		got.models[marker] = id
		got.mu.Unlock()
		readBack(by, "/api/v1/rm/reward-models/"+id, key, marker)
	})

	// Each instance in turn: kill -9 once and SIGTERM once, at random
	// moments, then restart it.
	type blow struct {
		api  int
		kill bool
	}
	schedule := []blow{{0, true}, {1, true}, {0, false}, {1, false}}
	rng.Shuffle(len(schedule), func(i, j int) { schedule[i], schedule[j] = schedule[j], schedule[i] })
	var done []string
	for _, b := range schedule {
		time.Sleep(time.Duration(2000+rng.Intn(3000)) * time.Millisecond)
		p := apis[b.api]
		if b.kill {
			p.kill()
			done = append(done, "kill -9 "+p.name)
		} else {
			sigterm(p)
			done = append(done, "SIGTERM "+p.name)
		}
		time.Sleep(time.Duration(500+rng.Intn(2000)) * time.Millisecond)
		p.start(t)
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
	// The dispatcher has built (here: failed) every queued model's dataset.
	// Its consumer group may still be re-forming after the kills — writes
	// apply their own events to the read model meanwhile, the dispatcher has
	// no such path — and what it appends later would land between the dump
	// and the replay below.
	for deadline := time.Now().Add(90 * time.Second); q(`SELECT count(*) FROM rm_reward_models WHERE status = 'queued' AND dataset_key IS NULL`) > 0; {
		require.False(t, time.Now().After(deadline), "the dispatcher never built the queued models' datasets")
		time.Sleep(200 * time.Millisecond)
	}
	for deadline := time.Now().Add(60 * time.Second); q(`SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM readmodel_applied a WHERE a.event_id = e.id)`) > 0; {
		require.False(t, time.Now().After(deadline), "the read model never caught up with the log")
		time.Sleep(200 * time.Millisecond)
	}
	require.Zero(t, q(`SELECT count(*) FROM projection_parked`), "nothing was parked")

	// Every acknowledged write is stored once; no write twice.
	tracesWith := func(marker string) int {
		return q(`SELECT count(DISTINCT trace_id) FROM rm_steps WHERE content = $1`, marker)
	}
	for marker, id := range got.imports {
		require.Equal(t, 1, tracesWith(marker), "acknowledged import %q", marker)
		require.Equal(t, 1, q(`SELECT count(*) FROM rm_steps WHERE trace_id = $1 AND content = $2`, id, marker), "acknowledged import %q is trace %s", marker, id)
	}
	for marker := range got.interrupted {
		require.LessOrEqual(t, tracesWith(marker)+q(`SELECT count(*) FROM rm_annotations WHERE comment = $1`, marker)+
			q(`SELECT count(*) FROM rm_reward_models WHERE name = $1`, marker), 1, "interrupted write %q stored at most once", marker)
	}
	require.Zero(t, q(`SELECT count(*) FROM (SELECT content FROM rm_steps WHERE content LIKE 'import %' GROUP BY 1 HAVING count(DISTINCT trace_id) > 1) d`),
		"an import stored twice")
	for marker, id := range got.annotations {
		require.Equal(t, 1, q(`SELECT count(*) FROM rm_annotations WHERE id = $1 AND comment = $2`, id, marker), "acknowledged annotation %q", marker)
	}
	require.Zero(t, q(`SELECT count(*) FROM (SELECT comment FROM rm_annotations WHERE comment LIKE 'note %' GROUP BY 1 HAVING count(*) > 1) d`),
		"an annotation stored twice")
	for marker, id := range got.models {
		require.Equal(t, 1, q(`SELECT count(*) FROM rm_reward_models WHERE id = $1 AND name = $2`, id, marker), "acknowledged model %q", marker)
	}
	require.Zero(t, q(`SELECT count(*) FROM (SELECT name FROM rm_reward_models GROUP BY 1 HAVING count(*) > 1) d`), "a model requested twice")
	require.Equal(t, q(`SELECT count(*) FROM events`), q(`SELECT count(*) FROM readmodel_applied`), "every event applied exactly once")
	require.Zero(t, got.unavailable, "a stored write was answered 503")
	require.Empty(t, got.staleReads, "a GET on the other instance right after an acknowledged write missed it")

	// The read model equals a replay of the log.
	before := dumpTables(t, pool)
	cli("replay", "readmodel")
	require.Equal(t, before, dumpTables(t, pool), "the read model equals a replay of the log")

	// The logs tell what moved, once, with the instance.
	text := logText()
	require.Regexp(t, `msg="Critic API started" instance=a addr=\S+ brokers=127\.0\.0\.1:\d+ database=\S+:\d+/\S+ blob_store=file://`, text)
	require.NotContains(t, text, "password")
	takeovers := regexp.MustCompile(`msg="relay: this instance now publishes the outbox to Kafka" instance=(a|b)`).FindAllStringSubmatch(text, -1)
	require.GreaterOrEqual(t, len(takeovers), 2, "the relay moved at least once (each instance was stopped once while it led or stood by)")
	for _, id := range []string{"a", "b"} {
		require.Regexp(t, `level=INFO msg="consumer group partitions moved" instance=`+id+` consumer_group=readmodel topic=critic.events holds=`, text)
	}
	for line := range strings.SplitSeq(text, "\n") {
		if strings.Contains(line, "level=ERROR") {
			require.NotContains(t, line, "Rebalance In Progress", "group churn is not an error")
			require.NotContains(t, line, "i/o timeout", "transient broker errors are not errors")
		}
	}

	writes := len(got.imports) + len(got.annotations) + len(got.models)
	require.NotZero(t, len(got.imports))
	require.NotZero(t, len(got.annotations))
	testNote("failover: %d acknowledged writes (%d imports, %d annotations, %d models), %d retries, %d interrupted, %d given up, "+
		"longest write %s (retries included); %s; %d relay take-overs; seed %d",
		writes, len(got.imports), len(got.annotations), len(got.models), got.retries, len(got.interrupted), len(got.gaveUp),
		got.maxStall.Round(10*time.Millisecond), strings.Join(done, ", "), len(takeovers), seed)
}

// sigterm stops p as a supervisor does: SIGTERM, then wait (kill -9 after
// 20 s).
func sigterm(p *chaosProc) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
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

// TestUsersCreateWithNoServerRunning: with no API instance consuming (all
// stopped, or the one holding the account's partition crashed), `critic
// users create` applies its own events as the API does: the account is in
// the read model when the command returns, with no event left unapplied.
func TestUsersCreateWithNoServerRunning(t *testing.T) {
	t.Parallel()
	bin := criticBin(t)
	dbURL := pgtest.NewDatabase(t)
	cmd := exec.Command(bin, "users", "create", "--name", "offline")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "CRITIC_DATA_DIR="+t.TempDir(), "KAFKA_BROKERS=127.0.0.1:1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.NotContains(t, string(out), "takes effect once", "applied, not left waiting for a server")
	m := keyRe.FindStringSubmatch(string(out))
	require.NotNil(t, m, string(out))
	pool, err := pg.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	defer pool.Close()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM rm_users WHERE name = 'offline'`).Scan(&n))
	require.Equal(t, 1, n)
	var unapplied int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM readmodel_applied a WHERE a.event_id = e.id)`).Scan(&unapplied))
	require.Zero(t, unapplied)
}
