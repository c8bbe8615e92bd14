package duck

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

// TestQueryStatementLimits: the limits that hold before DuckDB sees the
// text answer 422 naming the limit; text with no statement is 422, not an
// internal error.
func TestQueryStatementLimits(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{MaxStatementBytes: 4096, MaxSetOperations: 8})
	ctx := context.Background()
	for _, q := range []string{"-- only a comment", ";", "\uFEFF", " ; ; /* c */ \n-- d\n", "\uFEFF;"} {
		_, err := s.Query(ctx, "alice", q)
		v := requireInvalid(t, err, "empty query")
		require.Equal(t, "invalid_query", v.Code, "%q", q)
	}

	_, err := s.Query(ctx, "alice", "SELECT '"+strings.Repeat("x", 4096)+"'")
	v := requireInvalid(t, err, "the limit is 4096 bytes")
	require.Equal(t, "query_too_long", v.Code)

	union := "SELECT 1" + strings.Repeat(" UNION ALL SELECT 1", 9)
	_, err = s.Query(ctx, "alice", union)
	v = requireInvalid(t, err, "the statement has 9 set operations (UNION, INTERSECT, EXCEPT); the limit is 8")
	require.Equal(t, "query_too_complex", v.Code)
	_, err = s.Query(ctx, "alice", "SELECT 1 INTERSECT SELECT 1 EXCEPT SELECT 2"+strings.Repeat(" union select 1", 7))
	requireInvalid(t, err, "the limit is 8")

	// Words inside strings, quoted names and comments are not operations.
	res, err := s.Query(ctx, "alice", `SELECT 'union union union union union union union union union' AS "union except", 1 -- union union union`)
	require.NoError(t, err)
	require.Equal(t, []string{"union except", "1"}, res.Columns)
	res, err = s.Query(ctx, "alice", "SELECT 1 AS n"+strings.Repeat(" UNION ALL SELECT 1", 8))
	require.NoError(t, err)
	require.Len(t, res.Rows, 9)
}

// TestQueryResultBytesCapped: rows stop once the result's JSON passes
// MaxResultBytes (truncated), and a row over MaxRowBytes fails inside
// DuckDB before Go copies it.
func TestQueryResultBytesCapped(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{Timeout: time.Minute, MaxResultBytes: 1 << 20, MaxRowBytes: 300 << 10})
	ctx := context.Background()
	start := time.Now()
	res, err := s.Query(ctx, "alice", "SELECT repeat('x', 100000) AS big, i FROM range(600) t(i)")
	t.Logf("600 rows of 100 KB: %s", time.Since(start))
	require.NoError(t, err)
	require.True(t, res.Truncated)
	require.Len(t, res.Rows, 10, "ten rows of 100 KB fit in 1 MiB, the eleventh does not")
	require.Equal(t, []string{"big", "i"}, res.Columns)

	_, err = s.Query(ctx, "alice", "SELECT repeat('x', 400000) AS big")
	v := requireInvalid(t, err, "larger than the limit of 307200 bytes")
	require.Equal(t, "query_row_too_large", v.Code)
	_, err = s.Query(ctx, "alice", "SELECT range(100000) AS l")
	requireInvalid(t, err, "larger than the limit")

	// Escaped bytes count as what they become in JSON.
	res, err = s.Query(ctx, "alice", "SELECT repeat(chr(1), 50000) AS ctl FROM range(10)")
	require.NoError(t, err)
	require.True(t, res.Truncated)
	require.Len(t, res.Rows, 3, "each row is 300,000 bytes as JSON")

	// Duplicate column names keep their names (the query runs unwrapped).
	res, err = s.Query(ctx, "alice", "SELECT 1 AS a, 2 AS a")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "a"}, res.Columns)
}

// TestQueryPreparationIsInterrupted: planning a statement happens inside
// the time limit; DuckDB is interrupted while it plans and the caller hears
// back at the deadline, not when planning would have ended.
func TestQueryPreparationIsInterrupted(t *testing.T) {
	t.Parallel()
	parts := make([]string, 8000)
	for i := range parts {
		parts[i] = "SELECT " + strconv.Itoa(i) + " AS n"
	}
	wide := strings.Join(parts, " UNION ALL ")
	open, _ := newSnapshots(t, Options{Timeout: time.Minute, MaxStatementBytes: 1 << 20, MaxSetOperations: 1 << 20})
	start := time.Now()
	_, err := open.Query(context.Background(), "alice", "SELECT count(*) FROM ("+wide+")")
	full := time.Since(start)
	require.NoError(t, err)
	t.Logf("the statement takes %s to plan and run without a deadline", full)

	s, _ := newSnapshots(t, Options{Timeout: full / 10, MaxStatementBytes: 1 << 20, MaxSetOperations: 1 << 20})
	start = time.Now()
	_, err = s.Query(context.Background(), "alice", "SELECT count(*) FROM ("+wide+")")
	took := time.Since(start)
	v := requireInvalid(t, err, "query exceeded the time limit")
	require.Equal(t, "query_timeout", v.Code)
	t.Logf("with a %s limit it answered after %s", full/10, took)
	require.Less(t, took, full*3/4, "preparation must be interrupted at the deadline")
}

// TestQueryConcurrencyLimit: with every process-wide slot taken, a query
// waits QueueWait and is refused as unavailable naming the limit; one owner
// never holds more than MaxQueriesPerOwner slots, so another owner's query
// runs while the first owner's queue waits.
func TestQueryConcurrencyLimit(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{Timeout: 3 * time.Second, MaxConcurrent: 2, MaxQueriesPerOwner: 1, QueueWait: 200 * time.Millisecond})
	slow := "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r"
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	started := make(chan struct{})
	for _, owner := range []string{"heavy", "heavy", "other"} {
		wg.Go(func() {
			if owner == "other" {
				<-started
			}
			_, err := s.Query(ctx, owner, slow)
			errs <- err
		})
		if owner == "heavy" {
			time.Sleep(100 * time.Millisecond)
		}
	}
	close(started)
	time.Sleep(300 * time.Millisecond)
	// Both slots are taken (one heavy, one other); the second heavy query
	// waits for its owner's turn, holding no slot.
	_, err := s.Query(ctx, "third", "SELECT 1")
	var una *domain.UnavailableError
	require.True(t, errors.As(err, &una), "got %v", err)
	require.Equal(t, "query_capacity", una.Code)
	require.Contains(t, una.Message, "limit of 2 concurrent queries")
	require.Positive(t, una.RetryAfterSeconds)
	wg.Wait()
	close(errs)
	for err := range errs {
		requireInvalid(t, err, "time limit")
	}
	res, err := s.Query(ctx, "third", "SELECT 1")
	require.NoError(t, err)
	require.Len(t, res.Rows, 1)
}

// peakRSS resets the process's peak resident size (Linux clear_refs 5) and
// returns a function reading how far it rose since, in bytes.
func peakRSS(t *testing.T) func() int64 {
	t.Helper()
	read := func(field string) int64 {
		b, err := os.ReadFile("/proc/self/status")
		require.NoError(t, err)
		for l := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, field+":"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				require.NoError(t, err)
				return kb << 10
			}
		}
		t.Fatalf("no %s in /proc/self/status", field)
		return 0
	}
	require.NoError(t, os.WriteFile("/proc/self/clear_refs", []byte("5"), 0))
	base := read("VmRSS")
	return func() int64 { return read("VmHWM") - base }
}

// TestQueryMemoryBounded: the statements that grew the API by gigabytes
// answer within the limits (truncated, or 422 naming the limit) while the
// process's resident size rises by less than DuckDB's memory limit for the
// sandbox (512 MB here: a 2 GiB budget over 4 slots) plus 400 MB for Go.
// Measured on the test process itself, and not parallel, so no other test's
// memory counts.
func TestQueryMemoryBounded(t *testing.T) {
	s, _ := newSnapshots(t, Options{Timeout: time.Minute, QueryMemory: 2 << 30, MaxConcurrent: 4})
	require.Equal(t, "512MiB", s.opts.MemoryLimit)
	ctx := context.Background()
	rise := peakRSS(t)

	res, err := s.Query(ctx, "alice", "SELECT repeat('x', 1000000) FROM range(600)")
	if err == nil {
		require.True(t, res.Truncated)
		require.LessOrEqual(t, len(res.Rows), 16, "16 MiB of 1 MB rows")
		t.Logf("repeat: %d rows, peak rise %d MB", len(res.Rows), rise()>>20)
	} else {
		v := requireInvalid(t, err, "more memory than its limit of 512MiB")
		require.Equal(t, "query_out_of_memory", v.Code)
		t.Logf("repeat: %v, peak rise %d MB", err, rise()>>20)
	}

	parts := make([]string, 20000)
	for i := range parts {
		parts[i] = "SELECT " + strconv.Itoa(i)
	}
	_, err = s.Query(ctx, "alice", strings.Join(parts, " UNION ALL "))
	v := requireInvalid(t, err, "the limit is")
	require.Contains(t, []string{"query_too_long", "query_too_complex"}, v.Code)
	t.Logf("union: peak rise %d MB", rise()>>20)

	require.Less(t, rise(), int64(900<<20), "resident size rose by %d MB", rise()>>20)
}

// TestQueryAnswersAtTheDeadlineWhileFoldingGoesOn: DuckDB's constant
// folding does not check for interrupts, so a statement folding a huge
// constant keeps working past the deadline. The caller still hears back at
// the deadline, and the leftover work keeps its process-wide slot until it
// really ends, so it counts against the limit.
func TestQueryAnswersAtTheDeadlineWhileFoldingGoesOn(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{Timeout: 300 * time.Millisecond})
	_, err := s.Query(context.Background(), "alice", "SELECT len(list_sort(range(5000000)))")
	v := requireInvalid(t, err, "query exceeded the time limit")
	require.Equal(t, "query_timeout", v.Code)
	require.Len(t, s.slots, 1, "the folding was still running when the caller got its answer, holding its slot")
	require.Eventually(t, func() bool { return len(s.slots) == 0 }, 5*time.Minute, 100*time.Millisecond, "the slot is given back when DuckDB ends")
}
