package e2e

import (
	"fmt"
	"net/http"
	"os"
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
		trainedBy := map[string]int{}
		var busy float64 // the workers' own training time (metrics.seconds), summed
		for _, id := range ids {
			m := in.do("GET", "/api/v1/rm/reward-models/"+id, key, nil).JSON(b)
			trainedBy[m["worker_id"].(string)]++
			busy += m["metrics"].(map[string]any)["seconds"].(float64)
		}
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
