package duck

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const benchGroupBy = `SELECT role, count(*), avg(length(content)) FROM steps GROUP BY role`

// BenchmarkQueryGroupBy loads 1,000,000 steps for one owner and compares the
// latency of benchGroupBy through Query (fresh sandbox per query) with the
// same SQL on an already-open, warm DuckDB holding the same rows. It reports
// p50/p99 of both and the p50 ratio (target: within 2× of direct).
//
//	go test -run '^$' -bench QueryGroupBy -benchtime 30x ./platform/duck
func BenchmarkQueryGroupBy(b *testing.B) {
	const nSteps = 1_000_000
	dir := b.TempDir()
	loader, err := New(dir, Options{Prewarm: -1})
	require.NoError(b, err)
	start := time.Now()
	loadSteps(b, loader, "bench", nSteps)
	require.NoError(b, loader.Close())
	b.Logf("loaded %d steps in %s", nSteps, time.Since(start).Round(time.Millisecond))

	// The reference: one already-open DuckDB reading the same snapshot file,
	// warmed by a first run.
	ref, err := sql.Open("duckdb", "")
	require.NoError(b, err)
	defer ref.Close()
	ref.SetMaxOpenConns(1)
	_, err = ref.Exec(fmt.Sprintf("ATTACH %s AS src (READ_ONLY); USE src",
		quoteString(loader.Path("bench"))))
	require.NoError(b, err)
	direct := func() {
		rows, err := ref.Query(benchGroupBy)
		require.NoError(b, err)
		for rows.Next() {
		}
		require.NoError(b, rows.Err())
		require.NoError(b, rows.Close())
	}
	direct()

	for _, mode := range []struct {
		name string
		load LoadMode
	}{{"replica", LoadReplica}, {"copy", LoadCopy}, {"attach", LoadAttach}} {
		b.Run(mode.name, func(b *testing.B) {
			s, err := New(dir, Options{Load: mode.load})
			require.NoError(b, err)
			defer s.Close()
			time.Sleep(100 * time.Millisecond) // let the pool fill, as on a running server
			ctx := context.Background()
			var viaQuery, viaDirect []time.Duration
			// For copy and attach the reference runs alone first: their
			// sandboxes' background work (closing used instances, prewarming
			// new ones) would slow it. A replica has none, so the two
			// alternate, which keeps a shared machine's load swings out of
			// the ratio.
			interleave := mode.load == LoadReplica
			if !interleave {
				for i := 0; i < b.N; i++ {
					t := time.Now()
					direct()
					viaDirect = append(viaDirect, time.Since(t))
				}
			}
			// The first query after a change pays LoadReplica's copy.
			t := time.Now()
			_, err = s.Query(ctx, "bench", benchGroupBy)
			require.NoError(b, err)
			b.Logf("%s: first query %s", mode.name, time.Since(t).Round(time.Millisecond))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if interleave {
					t := time.Now()
					direct()
					viaDirect = append(viaDirect, time.Since(t))
				}
				t := time.Now()
				res, err := s.Query(ctx, "bench", benchGroupBy)
				viaQuery = append(viaQuery, time.Since(t))
				require.NoError(b, err)
				require.Len(b, res.Rows, 4)
			}
			b.StopTimer()
			qp50, qp99 := percentiles(viaQuery)
			dp50, dp99 := percentiles(viaDirect)
			b.ReportMetric(ms(qp50), "query-p50-ms")
			b.ReportMetric(ms(qp99), "query-p99-ms")
			b.ReportMetric(ms(dp50), "direct-p50-ms")
			b.ReportMetric(ms(dp99), "direct-p99-ms")
			b.ReportMetric(float64(qp50)/float64(dp50), "p50-ratio")
			b.Logf("%s: Query p50 %s p99 %s | direct p50 %s p99 %s | p50 ratio %.1fx (n=%d)",
				mode.name, qp50, qp99, dp50, dp99, float64(qp50)/float64(dp50), len(viaQuery))
		})
	}
}

// loadSteps writes n steps for owner in batches of 100,000 (one event each).
func loadSteps(tb testing.TB, s *Snapshots, owner string, n int) {
	roles := []string{"system", "user", "assistant", "tool"}
	const batch = 100_000
	for lo := 0; lo < n; lo += batch {
		steps := make([]StepRow, 0, batch)
		for i := lo; i < lo+batch && i < n; i++ {
			st := StepRow{ID: fmt.Sprintf("s%07d", i), TraceID: fmt.Sprintf("t%06d", i/20), Index: i % 20,
				Role: roles[i%4], Content: fmt.Sprintf("step %d of trace %d: ", i, i/20) + strings.Repeat("lorem ipsum ", 5+i%17)}
			if i%4 == 2 {
				st.ToolName, st.ToolInput = "search", map[string]any{"q": i}
			}
			steps = append(steps, st)
		}
		_, err := s.Apply(context.Background(), owner, fmt.Sprintf("load-%d", lo), func(tx *Tx) error {
			return tx.AppendSteps(context.Background(), steps)
		})
		require.NoError(tb, err)
	}
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	return s[len(s)/2], s[(len(s)*99)/100]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
