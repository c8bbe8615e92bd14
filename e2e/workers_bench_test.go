package e2e

import (
	"bytes"
	"cmp"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkWorkers (make bench-workers) measures whether work spreads: N
// small models (a tiny Qwen3 config) requested at once, trained by one
// `critic worker`, then by two, against the same API in the same run. Each
// worker runs with GOMAXPROCS=1 so it stands for one accelerator of its own
// on this shared machine; with work going to whichever worker is free, two
// workers take about half the time of one. It prints both wall times and
// the ratio two/one (target ≤ 0.6). CRITIC_BENCH_WORKER_MODELS sets N
// (default 6).
func BenchmarkWorkers(b *testing.B) {
	n := 6
	if s := os.Getenv("CRITIC_BENCH_WORKER_MODELS"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(b, err)
	}
	in, kafkaPort := startServeForJobs(b)
	key := in.newUser("bench-workers", false)
	traces := ratedTraces(b, in, key)
	base := sizedBase(b, in, "64", "2")

	run := func(workers int) time.Duration {
		var procs []*workerProc
		for i := range workers {
			p := newWorkerProc(b, in, kafkaPort, fmt.Sprintf("bench%d-%d", workers, i), "GOMAXPROCS=1")
			p.start()
			procs = append(procs, p)
		}
		// Every worker checked the API before the clock starts.
		require.Eventually(b, func() bool {
			logs := in.logText()
			for _, p := range procs {
				if !strings.Contains(logs, "worker_id="+p.id+" lease_seconds") {
					return false
				}
			}
			return true
		}, time.Minute, 50*time.Millisecond, "the workers did not start:\n%s", in.logText())
		apiCPU, workerCPU := cpuSeconds(in.cmd.Process.Pid), 0.0
		for _, p := range procs {
			workerCPU -= cpuSeconds(p.cmd.Process.Pid)
		}
		start := time.Now()
		var ids []string
		for i := range n {
			r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": fmt.Sprintf("bench-%d-%d", workers, i),
				"trace_ids": traces, "base_model": base, "epochs": 6})
			require.Equal(b, http.StatusOK, r.Status, string(r.Body))
			ids = append(ids, r.JSON(b)["id"].(string))
		}
		for _, id := range ids {
			m := in.waitModel(b, key, id, "succeeded", "failed")
			require.Equal(b, "succeeded", m["status"], "%v", m["error"])
		}
		took := time.Since(start)
		apiCPU = cpuSeconds(in.cmd.Process.Pid) - apiCPU
		for _, p := range procs {
			workerCPU += cpuSeconds(p.cmd.Process.Pid)
		}
		trainedBy := map[string]int{}
		var busy float64                  // the workers' own training time (metrics.seconds), summed
		runs := map[string][][2]float64{} // per worker: each model's start and finish, seconds after the clock started
		var waits []float64               // each model's wait in the queue (created → started)
		at := func(m map[string]any, k string) time.Time {
			t, err := time.Parse(time.RFC3339Nano, m[k].(string))
			require.NoError(b, err, "%s of %v", k, m)
			return t
		}
		for _, id := range ids {
			m := in.do("GET", "/api/v1/rm/reward-models/"+id, key, nil).JSON(b)
			w := m["worker_id"].(string)
			trainedBy[w]++
			busy += m["metrics"].(map[string]any)["seconds"].(float64)
			started, finished := at(m, "started_at"), at(m, "finished_at")
			waits = append(waits, started.Sub(at(m, "created_at")).Seconds())
			runs[w] = append(runs[w], [2]float64{started.Sub(start).Seconds(), finished.Sub(start).Seconds()})
		}
		// Where the wall time went: when each worker started and ended each
		// model (gaps between are a worker idling while models wait), and
		// how long models waited in the queue.
		slices.Sort(waits)
		for w, r := range runs {
			slices.SortFunc(r, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
			var spans []string
			for _, x := range r {
				spans = append(spans, fmt.Sprintf("%.1f→%.1f", x[0], x[1]))
			}
			fmt.Printf("bench-workers:   %s trained %s (s after the first request)\n", w, strings.Join(spans, ", "))
		}
		// What else ran on the machine's cores meanwhile: the API process
		// (with the embedded broker and the projections) competes with the
		// workers for the same CPUs, more so when two workers fill them.
		fmt.Printf("bench-workers:   CPU: API process %.1fs, worker processes %.1fs, during %.1fs on %d cores\n",
			apiCPU, workerCPU, took.Seconds(), runtime.NumCPU())
		fmt.Printf("bench-workers:   queue wait per model (created → started): min %.1fs, median %.1fs, max %.1fs\n", waits[0], waits[len(waits)/2], waits[len(waits)-1])
		for _, p := range procs {
			p.signal(syscall.SIGTERM)
		}
		fmt.Printf("bench-workers: %d models on %d worker(s): %.1fs wall, %.1fs of training summed over the models (%.2f trained at once on average; models per worker: %v)\n",
			n, workers, took.Seconds(), busy, busy/took.Seconds(), trainedBy)
		return took
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		// Two workers on one machine share its cores: under load the
		// per-model training time grows and the wall ratio with it, while
		// "trained at once" still shows whether the work spread.
		fmt.Printf("bench-workers: load average %s", load)
	}
	for range b.N {
		one := run(1)
		two := run(2)
		ratio := two.Seconds() / one.Seconds()
		fmt.Printf("bench-workers: 2 workers / 1 worker = %.2f (target ≤ 0.6)\n", ratio)
		b.ReportMetric(one.Seconds(), "s_1worker")
		b.ReportMetric(two.Seconds(), "s_2workers")
		b.ReportMetric(ratio, "ratio")
	}
}

// cpuSeconds is the user+system CPU time a process used so far, from
// /proc/<pid>/stat (0 where it cannot be read).
func cpuSeconds(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: fields count from the ')'.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ, 100 on Linux
}
