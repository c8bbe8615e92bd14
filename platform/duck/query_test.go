package duck

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

func requireInvalid(t *testing.T, err error, contains string) *domain.ValidationError {
	t.Helper()
	var v *domain.ValidationError
	require.True(t, errors.As(err, &v), "want a ValidationError, got %T: %v", err, err)
	require.Contains(t, v.Message, contains)
	return v
}

func TestQuerySeesOnlyTheCallersRows(t *testing.T) {
	t.Parallel()
	for _, mode := range []LoadMode{LoadReplica, LoadCopy, LoadAttach} {
		s, _ := newSnapshots(t, Options{Load: mode})
		seedTrace(t, s, "alice", "t1", 5, "ALICE")
		seedTrace(t, s, "bob", "t9", 7, "BOB")
		res, err := s.Query(context.Background(), "alice", "SELECT DISTINCT trace_id, split_part(content, ' ', 1) AS who FROM steps")
		require.NoError(t, err)
		require.Equal(t, &Result{Columns: []string{"trace_id", "who"}, Rows: [][]any{{"t1", "ALICE"}}}, res)
		require.EqualValues(t, 7, count(t, s, "bob", "SELECT count(*) FROM steps WHERE content LIKE 'BOB%'"))
	}
}

func TestQueryOnEmptyOwnerHasEmptyTables(t *testing.T) {
	t.Parallel()
	s, dir := newSnapshots(t, Options{})
	for _, table := range []string{"traces", "steps", "annotations", "scores", "action_scores"} {
		res, err := s.Query(context.Background(), "nobody", "SELECT * FROM "+table)
		require.NoError(t, err)
		require.Empty(t, res.Rows)
		require.NotEmpty(t, res.Columns)
	}
	require.NoFileExists(t, s.Path("nobody"))
	require.Equal(t, dirNames(t, dir), []string{})
}

func TestQueryCapsRows(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	ctx := context.Background()
	res, err := s.Query(ctx, "alice", "SELECT * FROM range(1000000)")
	require.NoError(t, err)
	require.Len(t, res.Rows, 1000)
	require.True(t, res.Truncated)
	require.Equal(t, []any{int64(999)}, res.Rows[999])

	res, err = s.Query(ctx, "alice", "SELECT * FROM range(1000)")
	require.NoError(t, err)
	require.Len(t, res.Rows, 1000)
	require.False(t, res.Truncated)

	// ORDER BY survives the row-cap wrapper.
	res, err = s.Query(ctx, "alice", "SELECT range AS n FROM range(5000) ORDER BY range DESC -- newest first;")
	require.NoError(t, err)
	require.Equal(t, []any{int64(4999)}, res.Rows[0])
	require.Equal(t, []any{int64(4000)}, res.Rows[999])
	require.True(t, res.Truncated)
}

func TestQueryShapes(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		sql  string
		cols []string
		rows [][]any
	}{
		{"SELECT 1 AS a, 2 AS a", []string{"a", "a"}, [][]any{{int32(1), int32(2)}}},
		{"SELECT 1;", []string{"1"}, [][]any{{int32(1)}}},
		{"  select 'x' as s ;  ", []string{"s"}, [][]any{{"x"}}},
		{"VALUES (1, 'a')", []string{"col0", "col1"}, [][]any{{int32(1), "a"}}},
		{"FROM (SELECT 2 AS n)", []string{"n"}, [][]any{{int32(2)}}},
		{"SELECT count(*) AS n FROM (DESCRIBE steps)", []string{"n"}, [][]any{{int64(14)}}},
		{"SELECT TIMESTAMPTZ '2026-09-29 03:12:00+02' AS ts, DATE '2026-01-02' AS d, TIME '10:11:12.5' AS t",
			[]string{"ts", "d", "t"}, [][]any{{"2026-09-29T01:12:00Z", "2026-01-02", "10:11:12.5"}}},
		{"SELECT 170141183460469231731687303715884105727::HUGEINT AS h, 12.50::DECIMAL(10,2) AS d",
			[]string{"h", "d"}, [][]any{{json.Number("170141183460469231731687303715884105727"), json.Number("12.5")}}},
		{"SELECT 'hi'::BLOB AS b, '6ba7b810-9dad-11d1-80b4-00c04fd430c8'::UUID AS u",
			[]string{"b", "u"}, [][]any{{"aGk=", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"}}},
		{"SELECT 'nan'::DOUBLE AS x, 'inf'::DOUBLE AS y, NULL AS z", []string{"x", "y", "z"}, [][]any{{"NaN", "Infinity", nil}}},
		{"SELECT [1, 2] AS l, {'k': 'v'} AS s, MAP {'a': 1} AS m, INTERVAL 2 DAY AS i, '{\"a\":1}'::JSON AS j",
			[]string{"l", "s", "m", "i", "j"}, [][]any{{[]any{int32(1), int32(2)}, map[string]any{"k": "v"},
				[]any{map[string]any{"key": "a", "value": int32(1)}}, map[string]any{"months": int32(0), "days": int32(2), "micros": int64(0)},
				map[string]any{"a": 1.0}}}},
	} {
		res, err := s.Query(ctx, "alice", tc.sql)
		require.NoError(t, err, tc.sql)
		require.Equal(t, tc.cols, res.Columns, tc.sql)
		require.Equal(t, tc.rows, res.Rows, tc.sql)
		_, err = json.Marshal(res)
		require.NoError(t, err, tc.sql)
	}
}

func TestQueryErrorsSpeakToTheUser(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	ctx := context.Background()
	_, err := s.Query(ctx, "alice", "SELEC 1")
	requireInvalid(t, err, "Parser Error: syntax error at or near \"SELEC\"")
	_, err = s.Query(ctx, "alice", "SELECT nope FROM steps")
	requireInvalid(t, err, `Referenced column "nope" not found`)
	_, err = s.Query(ctx, "alice", "   ")
	requireInvalid(t, err, "empty query")
	_, err = s.Query(ctx, "alice", "SELECT 1/0::INT, 'x'::INT")
	requireInvalid(t, err, "Conversion Error")
	_, err = s.Query(ctx, "alice", "UPDATE steps SET content = ''")
	requireInvalid(t, err, "only a single SELECT statement is allowed")
}

func TestQueryTimeoutInterruptsAndServerStaysHealthy(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{Timeout: time.Second})
	seedTrace(t, s, "alice", "t1", 3, "A")
	start := time.Now()
	_, err := s.Query(context.Background(), "alice",
		"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r")
	v := requireInvalid(t, err, "query exceeded the time limit of 1s")
	require.Equal(t, "query_timeout", v.Code)
	require.Less(t, time.Since(start), 5*time.Second, "the query must be interrupted, not waited out")

	_, err = s.Query(context.Background(), "alice", "SELECT count(*) FROM range(100000000000) a, range(1000) b")
	requireInvalid(t, err, "time limit")

	require.EqualValues(t, 3, count(t, s, "alice", "SELECT count(*) FROM steps"))
	seedTrace(t, s, "alice", "t2", 2, "A") // the writer was not blocked for good
	require.EqualValues(t, 5, count(t, s, "alice", "SELECT count(*) FROM steps"))
}

func TestQueryCallerCancellation(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	_, err := s.Query(ctx, "alice", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r")
	require.ErrorIs(t, err, context.Canceled)
}

// Lazy copying must never change an answer: tables reached without their
// name (dynamic SQL, catalog views) are loaded too.
func TestLazyLoadingKeepsAnswers(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	seedTrace(t, s, "alice", "t1", 6, "A")
	for _, q := range []string{
		"SELECT count(*) FROM query_table('steps')",
		"SELECT count(*) FROM query('SELECT * FROM st' || 'eps')",
		"SELECT estimated_size FROM duckdb_tables() WHERE table_name = 'st' || 'eps'",
		"SELECT count(*) FROM STEPS",
		`SELECT count(*) FROM "Steps"`,
	} {
		require.EqualValues(t, 6, count(t, s, "alice", q), q)
	}
}
