package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/worker"
	"github.com/criticml/critic/platform/pg/pgtest"
)

// BenchmarkScoreBackground is `make bench-score`'s background path (spec
// 001 "Learned action credit"): once a model is ready, traces that arrive
// are scored without a request. Burst: BENCH_BG_TRACES traces (default
// 300) imported at once, from arrival to every trace's published scores
// (trace score and action credit) for each of BENCH_BG_MODELS ready models
// (default 1; each model has its own two batches in flight, as an account
// with several models runs), in trace scorings/s beside the engine's raw
// scoring of the same texts in-process with the same checkpoints, printed
// both from arrival and from the end of the idle debounce (1 s here,
// CRITIC_SCORING_DEBOUNCE; the default is 30 s). The model is a random
// Qwen3, in two runs unless BENCH_BG_HIDDEN and BENCH_BG_LAYERS name one
// model: 512×4 with 100 traces, where scoring a trace takes 0.6–1 s on one
// core and dominates, as it does for a CPU worker's real models (a
// Qwen3-0.6B takes seconds), and 128×2 with 300 traces, the stress case,
// where a trace scores in 40–60 ms, as a small model on a GPU might, and
// the pipeline's own cost per trace shows (a tiny model scores a trace in
// about a millisecond, so a ratio against it measures only the pipeline's
// bookkeeping; BENCH_BG_HIDDEN=32 BENCH_BG_LAYERS=1 is that one).
// BENCH_BG_TRACES sets the burst of either. Steady: 60 traces arriving one
// by one at BENCH_BG_RATE a second (default 2, or half the raw reference's
// rate for a model too slow for that); each trace's latency from its
// import (rm_traces.updated_at) to its published trace score (the score
// event's time), p50 and p99, debounce included.
//
// On two or more cores the worker tier has a core of its own, as it has
// its own machine in a deployment (the workers are GPU machines; the API
// and PostgreSQL run elsewhere): the worker process is pinned to the last
// core and the API, its query process, PostgreSQL and this process to the
// others, each Go process with as many threads as its cores, and the raw
// reference runs on the worker's core with the worker's GOMAXPROCS — the
// same compute as the worker. BENCH_BG_PIN=0 lets every process use every
// core instead (the raw reference then has them all, while the worker
// shares them with the API and PostgreSQL: the ratio then measures how the
// pipeline's CPU divides one machine, not the pipeline). BENCH_BG_PGSTAT=1
// prints the statements PostgreSQL ran during the burst (its cluster must
// preload pg_stat_statements: docs/development.md).
func BenchmarkScoreBackground(b *testing.B) {
	type scenario struct{ hidden, layers, traces int }
	scenarios := []scenario{{512, 4, 100}, {128, 2, 300}}
	if os.Getenv("BENCH_BG_HIDDEN") != "" || os.Getenv("BENCH_BG_LAYERS") != "" {
		scenarios = []scenario{{benchEnvInt(b, "BENCH_BG_HIDDEN", 128), benchEnvInt(b, "BENCH_BG_LAYERS", 2), 300}}
	}
	for _, m := range scenarios {
		b.Run(fmt.Sprintf("%dx%d", m.hidden, m.layers), func(b *testing.B) {
			for range b.N {
				runScoreBackgroundBench(b, m.hidden, m.layers, benchEnvInt(b, "BENCH_BG_TRACES", m.traces))
			}
		})
	}
}

func runScoreBackgroundBench(b *testing.B, hidden, layers, burst int) {
	const debounce = time.Second
	nModels := benchEnvInt(b, "BENCH_BG_MODELS", 1)
	env := []string{"CRITIC_SCORING_DEBOUNCE=" + debounce.String()}
	profileDir := os.Getenv("BENCH_BG_PROFILE")
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", freePort(b))
	if profileDir != "" {
		env = append(env, "CRITIC_PPROF_ADDR="+pprofAddr)
	}
	pin := runtime.NumCPU() >= 2 && os.Getenv("BENCH_BG_PIN") != "0"
	workerCores, restCores := fmt.Sprint(runtime.NumCPU()-1), fmt.Sprintf("0-%d", runtime.NumCPU()-2)
	workerProcs := runtime.NumCPU() // the worker's GOMAXPROCS, and the raw reference's
	var workerEnv []string
	if pin {
		// Each Go process as many threads as the cores it is pinned to, as
		// in a container of that many cores (more would spin on the one).
		workerProcs = 1
		env = append(env, fmt.Sprintf("GOMAXPROCS=%d", runtime.NumCPU()-1))
		workerEnv = append(workerEnv, "GOMAXPROCS=1")
	}
	in, kafkaPort := startServeForJobs(b, env...)
	key := in.newUser("background", false)
	ids := ratedTraces(b, in, key)
	base := filepath.Join(b.TempDir(), "base")
	heads := max(hidden/64, 2)
	o, err := in.cli("model", "init", "--arch", "qwen3", "--hidden", strconv.Itoa(hidden), "--layers", strconv.Itoa(layers),
		"--heads", strconv.Itoa(heads), "--kv-heads", strconv.Itoa(max(heads/2, 1)), "--head-dim", strconv.Itoa(max(hidden/heads, 16)),
		"--intermediate", strconv.Itoa(3*hidden), "--tokenizer", filepath.Join(pgtest.ModuleRoot(b), "gpuworker", "testdata", "tinytok"), "--out", base)
	require.NoError(b, err, o)
	workerPProf := fmt.Sprintf("127.0.0.1:%d", freePort(b))
	if profileDir != "" {
		workerEnv = append(workerEnv, "CRITIC_PPROF_ADDR="+workerPProf)
	}
	wk := startWorkerWith(b, in, kafkaPort, "bench-bg", workerEnv...)
	if pin {
		pinTree(b, wk.Process.Pid, workerCores)
		pinTree(b, in.cmd.Process.Pid, restCores)
		pinTree(b, postmasterPid(b, in), restCores)
		pinSelf(b, restCores)
	}
	var modelIDs []string
	for i := range nModels {
		r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": fmt.Sprintf("bench-bg-%d", i), "trace_ids": ids, "base_model": base})
		require.Equal(b, http.StatusOK, r.Status, string(r.Body))
		modelIDs = append(modelIDs, r.JSON(b)["id"].(string))
	}
	for _, id := range modelIDs {
		require.Equal(b, "succeeded", in.waitModel(b, key, id, "succeeded", "failed")["status"], in.logText())
	}
	ctx := context.Background()
	scored := func() int {
		var n int
		require.NoError(b, in.pool.QueryRow(ctx, `SELECT count(*) FROM rm_trace_scores s JOIN rm_traces t ON t.id = s.trace_id AND t.revision = s.revision
			WHERE s.model_id = ANY($1) AND EXISTS (SELECT 1 FROM rm_action_scores a WHERE a.trace_id = t.id AND a.model_id = s.model_id)`, modelIDs).Scan(&n))
		return n
	}
	// Every 100 ms (at most that much late on a burst of 10 s or more):
	// the count joins three tables, and polled every 20 ms it made most
	// of PostgreSQL's reads during the burst (pg_stat_user_tables:
	// 116,000 index reads of rm_action_scores for 300 traces), on the
	// cores the pipeline it measures shares.
	waitScored := func(want int) {
		deadline := time.Now().Add(30 * time.Minute)
		for scored() < want {
			require.True(b, time.Now().Before(deadline), "only %d of %d trace scorings published", scored(), want)
			time.Sleep(100 * time.Millisecond)
		}
	}
	trace := func(prefix string, i int) string {
		return fmt.Sprintf(`{"id":"%s-%d","steps":[{"role":"user","content":"Where is order %d? It was due on Monday and the tracking page shows nothing since Friday."},`+
			`{"role":"assistant","content":"","tool_name":"lookup_order","tool_input":{"order_id":"%d"},"tool_call_id":"c"},`+
			`{"role":"tool","content":"{\"status\": \"in transit\", \"carrier\": \"DHL\", \"last_scan\": \"Friday 18:02, Leipzig hub\"}","tool_call_id":"c"},`+
			`{"role":"assistant","content":"Order %d is in transit with DHL: it was last scanned on Friday at the Leipzig hub. I have asked the carrier for an update and will write again as soon as they answer."}]}`, prefix, i, i, i, i)
	}
	// Traces already scored (the training traces), counted from now on.
	require.Eventually(b, func() bool { return scored() >= len(ids)*nModels }, 5*time.Minute, 50*time.Millisecond)
	before := scored()

	// Burst.
	var lines []string
	for i := range burst {
		lines = append(lines, trace("burst", i))
	}
	if profileDir != "" {
		// The API's and the worker's CPU profiles for most of the burst.
		// And 5 s of the worker's execution trace (go tool trace
		// worker.trace): where its scoring waits.
		for name, url := range map[string]string{"api.pprof": pprofAddr + "/debug/pprof/profile?seconds=20", "worker.pprof": workerPProf + "/debug/pprof/profile?seconds=20",
			"worker.trace": workerPProf + "/debug/pprof/trace?seconds=5"} {
			go func() {
				resp, err := http.Get("http://" + url)
				if err != nil {
					fmt.Printf("score-background: no %s profile: %v\n", name, err)
					return
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				_ = os.WriteFile(filepath.Join(profileDir, name), raw, 0o644)
			}()
		}
	}
	pgStat := os.Getenv("BENCH_BG_PGSTAT") != ""
	if pgStat {
		// The statements PostgreSQL ran during the burst (the cluster must
		// preload pg_stat_statements; see docs/development.md).
		_, err := in.pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
		require.NoError(b, err)
		_, err = in.pool.Exec(ctx, "SELECT pg_stat_statements_reset()")
		require.NoError(b, err)
	}
	apiCPU, workerCPU := procCPU(in.cmd.Process.Pid), procCPU(wk.Process.Pid)
	critic0, pg0 := in.cpuByProcess(b)
	self0 := procCPU(os.Getpid())
	machine0 := machineCPU()
	start := time.Now()
	for i := 0; i < burst; i += 1000 {
		in.importTraces(key, "stash", strings.Join(lines[i:min(i+1000, burst)], "\n"))
	}
	imported := time.Now()
	apiImport, pgImport := procCPU(in.cmd.Process.Pid)-apiCPU, time.Duration(0)
	{
		_, pg := in.cpuByProcess(b)
		pgImport = usedSince(pg0, pg)
	}
	waitScored(before + burst*nModels)
	pipeline := time.Since(start)
	afterDebounce := time.Since(imported.Add(debounce))
	apiCPU, workerCPU = procCPU(in.cmd.Process.Pid)-apiCPU, procCPU(wk.Process.Pid)-workerCPU
	machineBurst := machineCPU() - machine0
	critic1, pg1 := in.cpuByProcess(b)
	queryCPU := usedSince(critic0, critic1) - apiCPU // the API's query process
	selfCPU := procCPU(os.Getpid()) - self0
	pgCPU := usedSince(pg0, pg1)

	if pgStat {
		rows, err := in.pool.Query(ctx, `SELECT calls, total_exec_time, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 160)
			FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25`)
		require.NoError(b, err)
		for rows.Next() {
			var calls, nrows int64
			var ms float64
			var q string
			require.NoError(b, rows.Scan(&calls, &ms, &nrows, &q))
			fmt.Printf("score-background: pg %7d calls %8.0f ms %7d rows  %s\n", calls, ms, nrows, q)
		}
		rows.Close()
	}

	// Where the wall time went: the worker is busy from a batch's claim
	// (its runs' start) to its last run's end; the rest of the span from
	// the debounce's end to the last score is the pipeline's gaps (a
	// batch not yet requested, published or claimed).
	var busy, span, firstClaim, firstRequest time.Duration
	{
		// The first batch's request: the debounce's wake and the
		// scheduler's pass before it, Kafka and the claim after it.
		var requested time.Time
		require.NoError(b, in.pool.QueryRow(ctx, `SELECT min(recorded_at) FROM events WHERE type = 'scoring_batch.requested.v1' AND recorded_at >= $1
			AND payload->>'model_id' = ANY($2)`, start, modelIDs).Scan(&requested))
		firstRequest = requested.Sub(imported.Add(debounce))
		rows, err := in.pool.Query(ctx, `SELECT s.recorded_at, max(f.recorded_at) FROM events s
			JOIN events f ON f.stream = s.stream AND f.type IN ('scoring_run.succeeded.v1', 'scoring_run.failed.v1') AND f.version > s.version
			WHERE s.type = 'scoring_run.started.v1' AND s.recorded_at >= $1 AND split_part(s.stream, '/', 3) = ANY($2)
			GROUP BY s.recorded_at ORDER BY 1`, start, modelIDs)
		require.NoError(b, err)
		var end, last time.Time
		var seen bool
		eligible := imported.Add(debounce)
		for rows.Next() {
			var claimed, done time.Time
			require.NoError(b, rows.Scan(&claimed, &done))
			if !seen {
				// The debounce is timed from the traces' events, which
				// precede the import's answer (imported): the first
				// claim may come before eligible (a negative figure).
				seen, firstClaim = true, claimed.Sub(eligible)
			}
			if claimed.Before(eligible) {
				claimed = eligible // the span starts there
			}
			if claimed.Before(end) {
				claimed = end
			}
			if done.After(claimed) {
				busy += done.Sub(claimed)
				end = done
			}
			if done.After(last) {
				last = done
			}
		}
		rows.Close()
		span = last.Sub(eligible)
	}

	// The limit: the texts the worker scored (each run's items), with the
	// same checkpoints, in-process, one model after the other.
	if pin {
		pinSelf(b, workerCores)
	}
	procs := runtime.GOMAXPROCS(workerProcs)
	// The worker scores a model of this size on the default engine, or on
	// the one the operator chose for every load (worker.ScoringBackend).
	backend := worker.ScoringBackend(model.Config{HiddenSize: hidden})
	sameEngine := backend == "" || os.Getenv(model.BackendEnv) != ""
	loads := [2]func(string) (*model.RewardModel, error){worker.LoadScoringModel, model.LoadRewardModel} // raw's order
	const rawRuns = 2
	var rawWhole time.Duration
	var raw [2]struct{ wall, cpu, machine time.Duration } // the worker's engine, the default one
	texts := 0
	maxLen := 0 // the token window the worker scores with (an input-v3 model's is longer)
	for _, modelID := range modelIDs {
		// The burst's runs only: the training traces were scored before it
		// (and counting their texts, ~1 % more, made the reference slower).
		rows, err := in.pool.Query(ctx, `SELECT payload->>'items_key' FROM events WHERE type = 'scoring_run.requested.v1' AND payload->>'automatic' = 'true'
			AND payload->>'model_id' = $1 AND recorded_at >= $2`, modelID, start)
		require.NoError(b, err)
		var modelTexts []string
		var traceTexts [][]string
		maxLen = model.DefaultMaxLen
		for rows.Next() {
			var k string
			require.NoError(b, rows.Scan(&k))
			raw, err := os.ReadFile(filepath.Join(in.dataDir, "blobs", k))
			require.NoError(b, err)
			var items jobs.ScoringItems
			require.NoError(b, json.Unmarshal(raw, &items))
			var tt []string
			for _, it := range items.ActionScoreItems {
				tt = append(tt, it.Text)
			}
			tt = append(tt, items.Trace.Text)
			traceTexts = append(traceTexts, tt)
			if items.MaxLength > 0 {
				maxLen = items.MaxLength
			}
			modelTexts = append(modelTexts, tt...)
		}
		rows.Close()
		var owner string
		require.NoError(b, in.pool.QueryRow(ctx, `SELECT owner_id FROM rm_reward_models WHERE id = $1`, modelID).Scan(&owner))
		modelDir, err := worker.ExtractArchive(filepath.Join(in.dataDir, "blobs", "reward-models", owner, modelID+".tar.gz"), b.TempDir())
		require.NoError(b, err)
		// The reference: the engine calls the worker makes, in this
		// process with as many threads as the worker (GOMAXPROCS) on its cores — trace
		// by trace, each trace's texts in one call — on the engine the
		// worker scores with (worker.LoadScoringModel: ops in sequence for
		// a small model) and on the default engine (op-parallel), the
		// faster of the two, each the mean of rawRuns runs taken in turns
		// (this VM's back-to-back runs of one engine differ by up to a
		// quarter, so the faster of single runs was the luckier). Beside
		// it, for reading: every text at once (scoring a batch's traces
		// together measured no faster here: 8.2–12.2 s against 8.8–9.3 s
		// trace by trace for 300 traces, so the worker does not).
		for k := range 2 * rawRuns {
			i, load := k%2, loads[k%2]
			if i == 1 && sameEngine {
				// The worker scores on the default engine: measuring it
				// twice as often is all a second engine would add.
				continue
			}
			rm, err := load(modelDir)
			require.NoError(b, err)
			rm.MaxLen = maxLen
			_, err = rm.Score(traceTexts[0]) // compile, as the worker's first batch does
			require.NoError(b, err)
			var prof *os.File
			if k == 0 && profileDir != "" {
				// The raw reference's profile beside the worker's: the
				// same engine calls, function by function.
				prof, err = os.Create(filepath.Join(profileDir, "raw.pprof"))
				require.NoError(b, err)
				require.NoError(b, pprof.StartCPUProfile(prof))
			}
			s, cpu, mcpu := time.Now(), procCPU(os.Getpid()), machineCPU()
			for _, tt := range traceTexts {
				_, err = rm.Score(tt)
				require.NoError(b, err)
			}
			raw[i].wall += time.Since(s)
			if prof != nil {
				pprof.StopCPUProfile()
				require.NoError(b, prof.Close())
			}
			raw[i].cpu += procCPU(os.Getpid()) - cpu
			raw[i].machine += machineCPU() - mcpu
			if k == 0 {
				s = time.Now()
				_, err = rm.Score(modelTexts)
				require.NoError(b, err)
				rawWhole += time.Since(s)
			}
			rm.Model.Finalize()
		}
		texts += len(modelTexts)
	}
	for i := range raw {
		raw[i].wall /= rawRuns
		raw[i].cpu /= rawRuns
		raw[i].machine /= rawRuns
	}
	n := float64(burst * nModels)
	runtime.GOMAXPROCS(procs)
	if pin {
		pinSelf(b, restCores)
		fmt.Printf("score-background: the worker and the raw reference on core %s; the API, PostgreSQL and this process on cores %s (BENCH_BG_PIN=0 shares every core instead)\n", workerCores, restCores)
	} else {
		fmt.Println("score-background: every process on every core (not pinned: BENCH_BG_PIN=0, or one core)")
	}
	fmt.Printf("score-background: %d model(s) of hidden %d × %d layers, a %d-token window; burst of %d traces = %d scorings (%d texts)\n", nModels, hidden, layers, maxLen, burst, burst*nModels, texts)
	fmt.Printf("score-background: from arrival to published scores in %s = %.1f scorings/s (incl. the %s debounce); from the debounce's end %s = %.1f/s\n",
		pipeline.Round(time.Millisecond), n/pipeline.Seconds(), debounce, afterDebounce.Round(time.Millisecond), n/afterDebounce.Seconds())
	best := 0
	if !sameEngine && raw[1].wall < raw[0].wall {
		best = 1
	}
	rawDur := raw[best].wall
	fmt.Printf("score-background: from the debounce's end to the last score %s: the worker held a batch %s (%.0f%%), the first batch requested after %s and claimed after %s, gaps %s\n",
		span.Round(time.Millisecond), busy.Round(time.Millisecond), 100*busy.Seconds()/span.Seconds(), firstRequest.Round(time.Millisecond), firstClaim.Round(time.Millisecond), (span - busy).Round(time.Millisecond))
	fmt.Printf("score-background: CPU during the burst (%d cores): API process %.1f s, its query process %.1f s, worker %.1f s, PostgreSQL %.1f s, this process %.1f s, the machine's other work %.1f s; per trace API %.1f ms, PostgreSQL %.1f ms, worker %.1f ms\n",
		runtime.NumCPU(), apiCPU.Seconds(), queryCPU.Seconds(), workerCPU.Seconds(), pgCPU.Seconds(), selfCPU.Seconds(), (machineBurst - apiCPU - queryCPU - workerCPU - pgCPU - selfCPU).Seconds(),
		1000*apiCPU.Seconds()/n, 1000*pgCPU.Seconds()/n, 1000*workerCPU.Seconds()/n)
	fmt.Printf("score-background: of which the import itself (until the import calls answered, %s): API %.1f s, PostgreSQL %.1f s\n",
		imported.Sub(start).Round(time.Millisecond), apiImport.Seconds(), pgImport.Seconds())
	for i, name := range []string{"the worker's engine (" + cmp.Or(backend, "the default: op-parallel") + ")", "the default engine (op-parallel)"} {
		if i == 1 && sameEngine {
			fmt.Println("score-background: the worker scores on the default engine")
			continue
		}
		fmt.Printf("score-background: raw, the same texts in the worker's engine calls (trace by trace; GOMAXPROCS=%d, as the worker; on the worker's cores; the mean of %d runs) on %s: %s = %.1f scorings/s (CPU %.1f s, the machine's other work %.1f s)\n",
			workerProcs, rawRuns, name, raw[i].wall.Round(time.Millisecond), n/raw[i].wall.Seconds(), raw[i].cpu.Seconds(), (raw[i].machine - raw[i].cpu).Seconds())
	}
	fmt.Printf("score-background: raw reference = the faster engine, %s = %.1f scorings/s; for reading: all at once on the worker's engine %s = %.1f/s\n",
		rawDur.Round(time.Millisecond), n/rawDur.Seconds(), rawWhole.Round(time.Millisecond), n/rawWhole.Seconds())
	fmt.Printf("score-background: ratio background/raw = %.2f from arrival, %.2f from the debounce's end (goal ≥ 0.9)\n",
		rawDur.Seconds()/pipeline.Seconds(), rawDur.Seconds()/afterDebounce.Seconds())
	if profileDir != "" {
		// The worker's execution trace and CPU profile run during the
		// burst and not during the raw reference: 7 December, the one
		// profiled run read 0.80 against 0.91-0.96 unprofiled.
		fmt.Println("score-background: profiled (BENCH_BG_PROFILE): the worker's CPU profile and execution trace slow its burst and not the raw reference; read the ratio from an unprofiled run")
	}

	// Steady arrivals, at a rate the workers sustain (BENCH_BG_RATE traces
	// a second; default 2/s, or half the raw reference's rate for a model
	// too slow for that: above its rate the latency would be the queue's).
	const steady = 60
	rate := min(2, n/rawDur.Seconds()/float64(nModels)/2)
	if v := os.Getenv("BENCH_BG_RATE"); v != "" {
		var err error
		rate, err = strconv.ParseFloat(v, 64)
		require.NoError(b, err, "BENCH_BG_RATE")
		require.Positive(b, rate, "BENCH_BG_RATE")
	}
	for i := range steady {
		in.importTraces(key, "stash", trace("steady", i))
		time.Sleep(time.Duration(float64(time.Second) / rate))
	}
	waitScored(before + (burst+steady)*nModels)
	rows, err := in.pool.Query(ctx, `SELECT extract(epoch FROM s.created_at - t.updated_at) FROM rm_trace_scores s JOIN rm_traces t ON t.id = s.trace_id
		WHERE s.model_id = ANY($1) AND t.external_id LIKE 'steady-%'`, modelIDs)
	require.NoError(b, err)
	var lat []float64
	for rows.Next() {
		var s float64
		require.NoError(b, rows.Scan(&s))
		lat = append(lat, s)
	}
	rows.Close()
	require.Len(b, lat, steady*nModels)
	sort.Float64s(lat)
	pct := func(p float64) time.Duration {
		return time.Duration(lat[min(len(lat)-1, int(p*float64(len(lat))))] * float64(time.Second)).Round(time.Millisecond)
	}
	fmt.Printf("score-background: steady %.2g traces/s, arrival → published trace score: p50 %s, p99 %s (incl. the %s debounce)\n", rate, pct(0.5), pct(0.99), debounce)
}

// pinSelf pins this process's threads to cores, and not its children: the
// API and the worker are this process's children, each pinned on its own
// (pinTree of this process moved the worker onto the API's cores).
func pinSelf(b *testing.B, cores string) { pinProcess(b, os.Getpid(), cores) }

// pinProcess pins every thread of one process to cores (taskset's list form).
func pinProcess(b *testing.B, pid int, cores string) {
	out, err := exec.Command("taskset", "-a", "-c", "-p", cores, strconv.Itoa(pid)).CombinedOutput()
	require.NoError(b, err, "the bench pins its processes with taskset (util-linux; BENCH_BG_PIN=0 does not): %s", out)
}

// pinTree pins a process, every thread of it and its child processes (the
// API's query process, PostgreSQL's backends) to cores (taskset's list
// form); processes they start later inherit it.
func pinTree(b *testing.B, pid int, cores string) {
	pinProcess(b, pid, cores)
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		for c := range strings.FieldsSeq(string(raw)) {
			if n, err := strconv.Atoi(c); err == nil {
				pinTree(b, n, cores)
			}
		}
	}
}

// postmasterPid is the PostgreSQL server's main process: the parent of this
// instance's backends, from which new connections fork.
func postmasterPid(b *testing.B, in *instance) int {
	var backend int32
	require.NoError(b, in.pool.QueryRow(b.Context(), "SELECT pg_backend_pid()").Scan(&backend))
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", backend))
	require.NoError(b, err)
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	ppid, err := strconv.Atoi(f[1])
	require.NoError(b, err)
	return ppid
}

// machineCPU is the CPU time every process on the machine has used so far
// (all cores' non-idle time, from /proc/stat; 0 where that cannot be read):
// on a shared machine, what the other work took during each part.
func machineCPU() time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is already in user
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return time.Duration(busy) * time.Second / 100 // USER_HZ
}

// procCPU is the CPU time a process has used so far (user + system, from
// /proc; 0 where that cannot be read).
func procCPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces) start after ")".
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}
