package duck

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/stretchr/testify/require"
)

// TestFileWithoutAssessmentTables: an owner file written before step_labels
// and task_scores existed still answers queries in every load mode (the new
// tables are empty), instead of failing every query of that owner.
func TestFileWithoutAssessmentTables(t *testing.T) {
	t.Parallel()
	for _, mode := range []LoadMode{LoadReplica, LoadCopy, LoadAttach} {
		s, _ := newSnapshots(t, Options{Load: mode})
		c, err := duckdb.NewConnector(s.Path("old"), nil)
		require.NoError(t, err)
		db := sql.OpenDB(c)
		for _, tb := range userTables[:5] {
			_, err := db.Exec(fmtDDL(tb.ddl))
			require.NoError(t, err)
		}
		_, err = db.Exec(`INSERT INTO main.traces (id) VALUES ('t1')`)
		require.NoError(t, err)
		require.NoError(t, db.Close())
		for _, q := range []string{"SELECT count(*) FROM step_labels", "SELECT count(*) FROM task_scores", "SELECT count(*) FROM traces"} {
			res, err := s.Query(context.Background(), "old", q)
			require.NoError(t, err, "%v %s", mode, q)
			want := int64(0)
			if q == "SELECT count(*) FROM traces" {
				want = 1
			}
			require.Equal(t, [][]any{{want}}, res.Rows, "%v %s", mode, q)
		}
	}
}

func fmtDDL(ddl string) string {
	return fmt.Sprintf(ddl, "main")
}

// A trace's stored labels are put by chunk: a later put replaces the
// chunks it names and keeps the others, however many rows one put holds
// (more than one statement's worth here).
func TestPutStoredLabelsReplacesByChunk(t *testing.T) {
	t.Parallel()
	s, _ := newSnapshots(t, Options{})
	ctx := context.Background()
	first := map[string]json.RawMessage{}
	for i := range 2*scoreChunk + 7 {
		first[fmt.Sprintf("c%04d", i)] = json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
	}
	second := map[string]json.RawMessage{"c0001": json.RawMessage(`{"n":"again"}`), "c9999": json.RawMessage(`{"n":"new"}`)}
	var got map[string]json.RawMessage
	for i, put := range []map[string]json.RawMessage{first, second} {
		_, err := s.ApplyBatch(ctx, "o1", []string{fmt.Sprintf("e%d", i)}, func(tx *Tx, _ []int) error {
			if err := tx.PutStoredLabels(ctx, "t1", put); err != nil {
				return err
			}
			var err error
			got, err = tx.StoredLabels(ctx, "t1")
			return err
		})
		require.NoError(t, err)
	}
	want := map[string]json.RawMessage{}
	maps.Copy(want, first)
	maps.Copy(want, second)
	require.Len(t, got, len(want))
	for k, v := range want {
		require.JSONEq(t, string(v), string(got[k]), k)
	}
}
