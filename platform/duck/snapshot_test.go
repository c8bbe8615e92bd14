package duck

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 9, 29, 3, 12, 0, 0, time.UTC)

func newSnapshots(t *testing.T, opts Options) (*Snapshots, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := New(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, dir
}

// seedTrace imports one trace with n steps for owner, as the projection would.
func seedTrace(t *testing.T, s *Snapshots, owner, traceID string, n int, marker string) {
	t.Helper()
	steps := make([]StepRow, n)
	roles := []string{"system", "user", "assistant", "tool"}
	for i := range steps {
		steps[i] = StepRow{ID: fmt.Sprintf("%s-s%d", traceID, i), TraceID: traceID, Index: i,
			Role: roles[i%4], Content: fmt.Sprintf("%s step %d", marker, i)}
		if roles[i%4] == "assistant" {
			steps[i].ToolName = "lookup_order"
			steps[i].ToolInput = map[string]any{"order_id": "1182"}
			steps[i].ToolCallID = "call_1"
		}
	}
	applied, err := s.Apply(context.Background(), owner, "import-"+traceID, func(tx *Tx) error {
		ctx := context.Background()
		if err := tx.UpsertTrace(ctx, TraceRow{ID: traceID, ExternalID: "ext-" + traceID, Title: marker + " title",
			SourceFormat: "stash", Metadata: map[string]any{"agent": "support-bot"}, CreatedAt: t0, UpdatedAt: t0}); err != nil {
			return err
		}
		return tx.ReplaceSteps(ctx, traceID, steps)
	})
	require.NoError(t, err)
	require.True(t, applied)
}

func count(t *testing.T, s *Snapshots, owner, query string) int64 {
	t.Helper()
	res, err := s.Query(context.Background(), owner, query)
	require.NoError(t, err)
	require.Len(t, res.Rows, 1)
	return res.Rows[0][0].(int64)
}

func TestApplyDeduplicatesEvents(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	ctx := context.Background()
	seedTrace(t, s, "alice", "t1", 3, "A")
	add := func(tx *Tx) error {
		return tx.UpsertAnnotation(ctx, AnnotationRow{ID: "a1", TraceID: "t1", StepID: new("t1-s2"), StepIndex: new(2),
			Rating: new(-1), Comment: new("wrong order"), Quote: map[string]any{"text": "x"}, AuthorID: "u1",
			AuthorName: "henry", CreatedAt: t0})
	}
	applied, err := s.Apply(ctx, "alice", "ev-1", add)
	require.NoError(t, err)
	require.True(t, applied)
	applied, err = s.Apply(ctx, "alice", "ev-1", func(tx *Tx) error {
		return tx.Exec(ctx, "DELETE FROM steps")
	})
	require.NoError(t, err)
	require.False(t, applied, "a redelivered event must change nothing")
	require.EqualValues(t, 3, count(t, s, "alice", "SELECT count(*) FROM steps"))
	require.EqualValues(t, 1, count(t, s, "alice", "SELECT count(*) FROM annotations WHERE rating = -1 AND step_index = 2"))
}

func TestApplyRollsBackOnError(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	ctx := context.Background()
	seedTrace(t, s, "alice", "t1", 4, "A")
	boom := errors.New("boom")
	applied, err := s.Apply(ctx, "alice", "ev-2", func(tx *Tx) error {
		require.NoError(t, tx.ReplaceSteps(ctx, "t1", []StepRow{{ID: "n1", TraceID: "t1", Role: "user", Content: "new"}}))
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.False(t, applied)
	require.EqualValues(t, 4, count(t, s, "alice", "SELECT count(*) FROM steps"), "appended rows must roll back too")
	require.EqualValues(t, 4, count(t, s, "alice", "SELECT step_count::BIGINT FROM traces"))

	// The event id was rolled back with the rows, so a retry applies it.
	applied, err = s.Apply(ctx, "alice", "ev-2", func(tx *Tx) error {
		return tx.ReplaceSteps(ctx, "t1", []StepRow{{ID: "n1", TraceID: "t1", Role: "user", Content: "new"}})
	})
	require.NoError(t, err)
	require.True(t, applied)
	require.EqualValues(t, 1, count(t, s, "alice", "SELECT step_count::BIGINT FROM traces"))
	require.EqualValues(t, 1, count(t, s, "alice", "SELECT count(*) FROM steps WHERE content = 'new'"))
}

func TestTxHelpers(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	ctx := context.Background()
	seedTrace(t, s, "alice", "t1", 4, "A")
	seedTrace(t, s, "alice", "t2", 2, "A")
	_, err := s.Apply(ctx, "alice", "ev-scores", func(tx *Tx) error {
		if err := tx.InsertScore(ctx, ScoreRow{TraceID: "t1", RewardModelID: "rm1", RewardModelName: "m", Score: 1.5, CreatedAt: t0}); err != nil {
			return err
		}
		return tx.InsertActionScores(ctx, []ActionScoreRow{
			{TraceID: "t1", StepID: "t1-s2", StepIndex: 2, RewardModelID: "rm1", RewardModelName: "m", Score: 0.3, Credit: 0.1, CreatedAt: t0},
			{TraceID: "t2", StepID: "t2-s1", StepIndex: 1, RewardModelID: "rm1", RewardModelName: "m", Score: 0.3, Credit: 0.1, CreatedAt: t0},
		})
	})
	require.NoError(t, err)

	res, err := s.Query(ctx, "alice", `SELECT s.tool_input, t.metadata, t.created_at, a.credit
		FROM steps s JOIN traces t ON t.id = s.trace_id JOIN action_scores a ON a.step_id = s.id WHERE s.id = 't1-s2'`)
	require.NoError(t, err)
	require.Equal(t, [][]any{{map[string]any{"order_id": "1182"}, map[string]any{"agent": "support-bot"},
		"2026-09-29T03:12:00Z", 0.1}}, res.Rows)

	_, err = s.Apply(ctx, "alice", "ev-del", func(tx *Tx) error { return tx.DeleteTrace(ctx, "t1") })
	require.NoError(t, err)
	for table, want := range map[string]int64{"traces": 1, "steps": 2, "scores": 0, "action_scores": 1} {
		require.EqualValues(t, want, count(t, s, "alice", "SELECT count(*) FROM "+table), table)
	}

	_, err = s.Apply(ctx, "alice", "ev-ann", func(tx *Tx) error {
		return tx.UpsertAnnotation(ctx, AnnotationRow{ID: "a1", TraceID: "t2", Rating: new(1), CreatedAt: t0})
	})
	require.NoError(t, err)
	_, err = s.Apply(ctx, "alice", "ev-ann-edit", func(tx *Tx) error {
		return tx.UpsertAnnotation(ctx, AnnotationRow{ID: "a1", TraceID: "t2", Rating: new(1), LabelError: true,
			LabelErrorNote: new("misclick"), CreatedAt: t0})
	})
	require.NoError(t, err)
	res, err = s.Query(ctx, "alice", "SELECT step_id, rating, label_error, label_error_note FROM annotations")
	require.NoError(t, err)
	require.Equal(t, [][]any{{nil, int32(1), true, "misclick"}}, res.Rows)
	_, err = s.Apply(ctx, "alice", "ev-ann-del", func(tx *Tx) error { return tx.DeleteAnnotation(ctx, "a1") })
	require.NoError(t, err)
	require.EqualValues(t, 0, count(t, s, "alice", "SELECT count(*) FROM annotations"))
}

func TestApplyRejectsUnsafeOwnerIDs(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	for _, id := range []string{"", "../x", "a/b", ".hidden", "a b"} {
		_, err := s.Apply(context.Background(), id, "ev", func(*Tx) error { return nil })
		require.Error(t, err, id)
		_, err = s.Query(context.Background(), id, "SELECT 1")
		require.Error(t, err, id)
	}
}

// Writers and readers of one owner interleave: every query sees a committed
// state (a whole trace or none), never a half-applied event.
func TestQueriesDuringWrites(t *testing.T) {
	t.Parallel()
	for _, mode := range []LoadMode{LoadReplica, LoadCopy, LoadAttach} {
		s, _ := newSnapshots(t, Options{Load: mode, MaxOpenWriters: 1})
		ctx := context.Background()
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range 20 {
				seedTrace(t, s, "alice", fmt.Sprintf("t%d", i), 10, "A")
				seedTrace(t, s, "bob", fmt.Sprintf("t%d", i), 10, "B") // forces writer eviction
			}
		})
		for range 20 {
			res, err := s.Query(ctx, "alice", "SELECT count(*) % 10, count(DISTINCT trace_id) * 10 = count(*) FROM steps")
			require.NoError(t, err)
			require.Equal(t, []any{int64(0), true}, res.Rows[0])
		}
		wg.Wait()
		require.EqualValues(t, 200, count(t, s, "alice", "SELECT count(*) FROM steps"))
	}
}

func TestResetDropsTheSnapshot(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	seedTrace(t, s, "alice", "t1", 3, "A")
	require.NoError(t, s.Reset("alice"))
	require.EqualValues(t, 0, count(t, s, "alice", "SELECT count(*) FROM steps"))
	seedTrace(t, s, "alice", "t1", 2, "A") // the same event ids apply again after a reset
	require.EqualValues(t, 2, count(t, s, "alice", "SELECT count(*) FROM steps"))
}

func TestJSONColumnsRoundTrip(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	ctx := context.Background()
	_, err := s.Apply(ctx, "alice", "ev", func(tx *Tx) error {
		return tx.AppendSteps(ctx, []StepRow{
			{ID: "s1", TraceID: "t", Role: "assistant", ToolInput: json.RawMessage(`{"b":[1,2],"a":null}`)},
			{ID: "s2", TraceID: "t", Role: "user", Content: ""},
		})
	})
	require.NoError(t, err)
	res, err := s.Query(ctx, "alice", "SELECT tool_input, tool_input->>'$.b[1]', content, metadata FROM steps ORDER BY id")
	require.NoError(t, err)
	require.Equal(t, [][]any{
		{map[string]any{"a": nil, "b": []any{1.0, 2.0}}, "2", "", nil},
		{nil, nil, "", nil},
	}, res.Rows)
}

// An owner file written before traces.contribute existed gains the column
// when its writer opens (false until a replay), and new rows carry consent.
func TestOldFileGainsContributeColumn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	old, err := sql.Open("duckdb", filepath.Join(dir, "alice.duckdb"))
	require.NoError(t, err)
	_, err = old.Exec(`CREATE TABLE main.traces(id VARCHAR, external_id VARCHAR, title VARCHAR, source_format VARCHAR, source_id VARCHAR,
		step_count INTEGER, metadata JSON, created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ);
		INSERT INTO main.traces (id, title) VALUES ('t0', 'before the column')`)
	require.NoError(t, err)
	require.NoError(t, old.Close())

	s, err := New(dir, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	_, err = s.Apply(ctx, "alice", "ev-1", func(tx *Tx) error {
		return tx.UpsertTrace(ctx, TraceRow{ID: "t1", Title: "opted in", Contribute: true, CreatedAt: t0, UpdatedAt: t0})
	})
	require.NoError(t, err)
	res, err := s.Query(ctx, "alice", "SELECT id, contribute FROM traces ORDER BY id")
	require.NoError(t, err)
	require.Equal(t, [][]any{{"t0", false}, {"t1", true}}, res.Rows)
}

// An owner file written before the steps' model and token columns existed
// gains them when its writer opens (NULL for its older rows).
func TestOldFileGainsStepUsageColumns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	old, err := sql.Open("duckdb", filepath.Join(dir, "alice.duckdb"))
	require.NoError(t, err)
	_, err = old.Exec(`CREATE TABLE main.steps(id VARCHAR, trace_id VARCHAR, step_index INTEGER, role VARCHAR, content VARCHAR,
		tool_name VARCHAR, tool_input JSON, tool_call_id VARCHAR, metadata JSON);
		INSERT INTO main.steps (id, trace_id, step_index, role, content) VALUES ('s0', 't0', 0, 'user', 'before the columns')`)
	require.NoError(t, err)
	require.NoError(t, old.Close())

	s, err := New(dir, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	in := int32(7)
	_, err = s.Apply(ctx, "alice", "ev-1", func(tx *Tx) error {
		return tx.AppendSteps(ctx, []StepRow{{ID: "s1", TraceID: "t1", Role: "assistant", Content: "hi", Model: "m", InputTokens: &in}})
	})
	require.NoError(t, err)
	res, err := s.Query(ctx, "alice", "SELECT id, model, input_tokens, output_tokens FROM steps ORDER BY id")
	require.NoError(t, err)
	require.Equal(t, [][]any{{"s0", nil, nil, nil}, {"s1", "m", int32(7), nil}}, res.Rows)
}
