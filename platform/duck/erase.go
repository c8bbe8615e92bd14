package duck

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// Shred makes a deletion of the owner's rows final on disk. DuckDB keeps a
// deleted row's bytes in the file's write-ahead log, and a checkpoint
// leaves them in the freed blocks of the file (measured: the marker of a
// deleted trace survives CHECKPOINT), so a trace erased for privacy (issue
// 37) would stay readable in $CRITIC_DATA_DIR. Shred therefore closes the
// writer and copies the database into a fresh file that replaces the old
// one: only live rows are written. It costs a copy of the owner's file per
// batch that deleted a trace, which deletions (rare, deliberate) can
// afford. The replicas are in memory and follow the deletion as any change.
func (s *Snapshots) Shred(ctx context.Context, ownerID string) error {
	o, err := s.owner(ownerID)
	if err != nil {
		return err
	}
	o.rw.Lock()
	defer o.rw.Unlock()
	if err := s.closeWriter(o); err != nil {
		return fmt.Errorf("duck: close %s before an erasure: %w", ownerID, err)
	}
	path := s.Path(ownerID)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	fresh := path + ".shred"
	for _, p := range []string{fresh, fresh + ".wal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := copyDatabase(ctx, path, fresh); err != nil {
		_ = os.Remove(fresh)
		return fmt.Errorf("duck: rewrite %s after an erasure: %w", ownerID, err)
	}
	if err := os.Rename(fresh, path); err != nil {
		return fmt.Errorf("duck: replace %s after an erasure: %w", ownerID, err)
	}
	return nil
}

// copyDatabase writes every table of the DuckDB file from into a new file
// to, checkpointed and closed.
func copyDatabase(ctx context.Context, from, to string) error {
	connector, err := duckdb.NewConnector("?threads=1", nil)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		fmt.Sprintf("ATTACH %s AS old (READ_ONLY)", quoteString(from)),
		fmt.Sprintf("ATTACH %s AS fresh", quoteString(to)),
		"COPY FROM DATABASE old TO fresh",
		"DETACH fresh",
		"DETACH old",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}
