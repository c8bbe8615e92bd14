package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the reference connection
	"github.com/stretchr/testify/require"
)

// benchQuerySQL is the group-by of `make bench-query`.
const benchQuerySQL = "SELECT role, count(*) AS n, avg(length(content)) AS avg_len FROM steps GROUP BY role ORDER BY role"

// BenchmarkQuery measures `make bench-query`: 1,000,000 steps of one owner
// (50,000 traces × 20 steps imported through the API, 1,000 traces per
// request), then benchQuerySQL 200 times through POST /query — HTTP, auth,
// sandbox and JSON included — alternating with the same SQL on an
// already-open DuckDB connection to a copy of the owner's snapshot file
// taken in the same run. It prints p50/p99 of both and their ratio (target:
// /query p50 within 2× of direct). Then 30 times: an annotation added
// through the API and the first /query after it, against the direct
// reference (target: within 2× too; the owner's replica follows the write
// instead of being rebuilt). CRITIC_BENCH_QUERY_STEPS scales it down.
func BenchmarkQuery(b *testing.B) {
	for range b.N {
		runQueryBench(b)
	}
}

func runQueryBench(b *testing.B) {
	nSteps := 1_000_000
	if v := os.Getenv("CRITIC_BENCH_QUERY_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err)
		nSteps = n
	}
	const stepsPer, perRequest, workers, runs, writeRuns = 20, 1000, 2, 200, 30
	traces := nSteps / stepsPer

	in := startServe(b)
	key := in.newUser("bench", false)
	lines := genTraces(traces, stepsPer, "q")

	start := time.Now()
	jobs := make(chan string)
	errs := make(chan error, traces/perRequest+1)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for data := range jobs {
				r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": "stash", "data": data})
				if r.Status != http.StatusOK {
					errs <- fmt.Errorf("import: %d %s", r.Status, r.Body)
				}
			}
		})
	}
	for i := 0; i < traces; i += perRequest {
		jobs <- strings.Join(lines[i:min(i+perRequest, traces)], "\n")
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	imported := time.Since(start)
	countSQL := "SELECT count(*) FROM steps"
	for {
		// 503 snapshot_catching_up while the snapshot applies the import.
		status, res := queryStatus(b, in, key, countSQL)
		if status == http.StatusOK && strings.Contains(res, fmt.Sprintf("[[%d]]", traces*stepsPer)) {
			break
		}
		require.Contains(b, []int{http.StatusOK, http.StatusServiceUnavailable}, status, res)
		require.Less(b, time.Since(start), 15*time.Minute, "snapshot never reached %d steps: %s", traces*stepsPer, res)
		time.Sleep(200 * time.Millisecond)
	}
	b.Logf("imported %d steps through the API in %s; in the snapshot after %s",
		traces*stepsPer, imported.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// The reference needs the owner's file, which the server holds: stop it
	// (closing checkpoints the file), copy the file, start it again.
	var owner string
	require.NoError(b, in.pool.QueryRow(context.Background(), "SELECT id::text FROM rm_users WHERE name = 'bench'").Scan(&owner))
	in.stop()
	ref := filepath.Join(b.TempDir(), "reference.duckdb")
	raw, err := os.ReadFile(filepath.Join(in.dataDir, "snapshots", owner+".duckdb"))
	require.NoError(b, err)
	require.NoError(b, os.WriteFile(ref, raw, 0o600))
	in.start()

	db, err := sql.Open("duckdb", "")
	require.NoError(b, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	_, err = db.Exec(fmt.Sprintf("ATTACH '%s' AS ref (READ_ONLY); USE ref", ref))
	require.NoError(b, err)
	direct := func() time.Duration {
		t := time.Now()
		rows, err := db.Query(benchQuerySQL)
		require.NoError(b, err)
		for rows.Next() {
		}
		require.NoError(b, rows.Err())
		require.NoError(b, rows.Close())
		return time.Since(t)
	}
	direct() // warm, as the server's replica is warm after its first query

	t := time.Now()
	first := queryOnce(b, in, key, benchQuerySQL)
	b.Logf("first /query after start (builds the owner's replica): %s", time.Since(t).Round(time.Millisecond))
	require.Contains(b, first, `"columns":["role","n","avg_len"]`)
	time.Sleep(time.Duration(nSteps/100_000+1) * time.Second) // let the replica's background compression finish

	var viaAPI, viaDirect []time.Duration
	b.ResetTimer()
	for range runs {
		viaDirect = append(viaDirect, direct())
		t := time.Now()
		res := queryOnce(b, in, key, benchQuerySQL)
		viaAPI = append(viaAPI, time.Since(t))
		require.Equal(b, first, res)
	}
	b.StopTimer()

	// The first query after a write: each run adds an annotation through
	// the API (answered once the read model has it), then times the next
	// POST /query — which waits until this instance's snapshot has applied
	// the write, and must not rebuild the owner's replica for it — beside
	// the same SQL on the direct connection.
	var traceID string
	require.NoError(b, in.pool.QueryRow(context.Background(),
		"SELECT id::text FROM rm_traces WHERE owner_id = $1::uuid ORDER BY id LIMIT 1", owner).Scan(&traceID))
	var afterWrite, directAfter []time.Duration
	for i := range writeRuns {
		r := in.do("POST", "/api/v1/rm/traces/"+traceID+"/annotations", key, map[string]any{"rating": 1, "comment": fmt.Sprintf("bench %d", i)})
		require.Equal(b, http.StatusOK, r.Status, string(r.Body))
		directAfter = append(directAfter, direct())
		t := time.Now()
		res := queryOnce(b, in, key, benchQuerySQL)
		afterWrite = append(afterWrite, time.Since(t))
		require.Equal(b, first, res)
		require.Contains(b, queryOnce(b, in, key, "SELECT count(*) FROM annotations"), fmt.Sprintf("[[%d]]", i+1),
			"the query after the write sees it")
	}
	wp50, wp99 := pctl(afterWrite)
	wd50, _ := pctl(directAfter)
	writeRatio := float64(wp50) / float64(wd50)
	b.ReportMetric(wp50.Seconds()*1000, "after-write-p50-ms")
	b.ReportMetric(writeRatio, "after-write-p50-ratio")

	ap50, ap99 := pctl(viaAPI)
	dp50, dp99 := pctl(viaDirect)
	ratio := float64(ap50) / float64(dp50)
	b.ReportMetric(ap50.Seconds()*1000, "query-p50-ms")
	b.ReportMetric(ap99.Seconds()*1000, "query-p99-ms")
	b.ReportMetric(dp50.Seconds()*1000, "direct-p50-ms")
	b.ReportMetric(dp99.Seconds()*1000, "direct-p99-ms")
	b.ReportMetric(ratio, "p50-ratio")
	fmt.Printf("bench-query: %d steps, %d runs: POST /query p50 %s p99 %s | direct DuckDB p50 %s p99 %s | p50 ratio %.2f× (target ≤ 2×)\n",
		nSteps, runs, ap50.Round(10*time.Microsecond), ap99.Round(10*time.Microsecond),
		dp50.Round(10*time.Microsecond), dp99.Round(10*time.Microsecond), ratio)
	fmt.Printf("bench-query: first query after a write (%d annotations added one by one): POST /query p50 %s p99 %s | direct DuckDB p50 %s | p50 ratio %.2f× (target ≤ 2×)\n",
		writeRuns, wp50.Round(10*time.Microsecond), wp99.Round(10*time.Microsecond), wd50.Round(10*time.Microsecond), writeRatio)
}

// queryOnce posts sql and returns the raw 200 body.
func queryOnce(b *testing.B, in *instance, key, sqlText string) string {
	status, body := queryStatus(b, in, key, sqlText)
	require.Equal(b, http.StatusOK, status, body)
	return body
}

// queryStatus posts sql and returns the status and raw body.
func queryStatus(b *testing.B, in *instance, key, sqlText string) (int, string) {
	req, err := http.NewRequest("POST", in.url+"/api/v1/rm/query", strings.NewReader(`{"sql":`+strconv.Quote(sqlText)+`}`))
	require.NoError(b, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b, err)
	return resp.StatusCode, string(body)
}

func pctl(d []time.Duration) (p50, p99 time.Duration) {
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	return s[len(s)/2], s[(len(s)*99)/100]
}

// BenchmarkQueryNeighbours measures what one account's heavy queries cost
// another account (part of `make bench-query`): 50 small queries of a light
// account alone, then 50 while a heavy account keeps its two per-account
// turns busy with queries that run to the time limit. It prints p50/p99 of
// both and their ratio; every light query must be answered (no 503), which
// the per-account turn (CRITIC_QUERY_MAX_PER_ACCOUNT) guarantees while the
// process has slots left.
func BenchmarkQueryNeighbours(b *testing.B) {
	for range b.N {
		in := startServe(b)
		heavyKey := in.newUser("heavy", false)
		lightKey := in.newUser("light", false)
		light := func(n int) []time.Duration {
			var took []time.Duration
			for range n {
				t := time.Now()
				queryOnce(b, in, lightKey, "SELECT count(*) FROM steps")
				took = append(took, time.Since(t))
			}
			return took
		}
		// Warm: until the snapshot has caught up with the new accounts
		// (503 snapshot_catching_up meanwhile), then the light replica.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			status, body := queryStatus(b, in, lightKey, "SELECT 1")
			if status == http.StatusOK {
				break
			}
			require.True(b, time.Now().Before(deadline), "%d %s", status, body)
		}
		light(5)
		before := light(50)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					_, _, _, _ = postQuery(in.url, heavyKey, heavySQL)
				}
			})
		}
		time.Sleep(time.Second)
		during := light(50)
		close(stop)
		wg.Wait()
		b50, b99 := pctl(before)
		d50, d99 := pctl(during)
		ratio := float64(d50) / float64(b50)
		b.ReportMetric(d50.Seconds()*1000, "neighbour-p50-ms")
		b.ReportMetric(ratio, "neighbour-p50-ratio")
		fmt.Printf("bench-query: another account's small query: alone p50 %s p99 %s | while one account runs heavy queries p50 %s p99 %s | p50 ratio %.2f×\n",
			b50.Round(10*time.Microsecond), b99.Round(10*time.Microsecond), d50.Round(10*time.Microsecond), d99.Round(10*time.Microsecond), ratio)
	}
}
