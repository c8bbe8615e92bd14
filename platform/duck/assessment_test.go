package duck

import (
	"context"
	"database/sql"
	"fmt"
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
