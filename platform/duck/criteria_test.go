package duck

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOldFileGainsCriterionColumns: an owner file written before criteria
// gains annotations.criterion_id and value (NULL on its old rows) and the
// criteria table, and takes criterion values at once.
func TestOldFileGainsCriterionColumns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	old, err := sql.Open("duckdb", filepath.Join(dir, "alice.duckdb"))
	require.NoError(t, err)
	_, err = old.Exec(`CREATE TABLE main.annotations(id VARCHAR, trace_id VARCHAR, step_id VARCHAR, step_index INTEGER, rating INTEGER,
		comment VARCHAR, quote JSON, label_error BOOLEAN, label_error_note VARCHAR, author_id VARCHAR, author_name VARCHAR, created_at TIMESTAMPTZ);
		INSERT INTO main.annotations (id, trace_id, rating) VALUES ('a0', 't0', 1)`)
	require.NoError(t, err)
	require.NoError(t, old.Close())

	s, err := New(dir, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	c, v := "c1", "yes"
	_, err = s.Apply(ctx, "alice", "ev-1", func(tx *Tx) error {
		if err := tx.UpsertCriterion(ctx, CriterionRow{ID: c, Name: "Correct", Kind: "binary", AppliesTo: "trace", Labels: []any{}}); err != nil {
			return err
		}
		return tx.UpsertAnnotation(ctx, AnnotationRow{ID: "a1", TraceID: "t1", CriterionID: &c, Value: &v})
	})
	require.NoError(t, err)
	res, err := s.Query(ctx, "alice", "SELECT a.id, a.rating, a.criterion_id, a.value, c.name FROM annotations a LEFT JOIN criteria c USING (criterion_id) ORDER BY a.id")
	require.NoError(t, err)
	require.Equal(t, [][]any{{"a0", int32(1), nil, nil, nil}, {"a1", nil, "c1", "yes", "Correct"}}, res.Rows)
}
