package duck

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// openWriter makes sure o has an open writer instance with the schema in
// place. The caller holds o.rw exclusively.
func (s *Snapshots) openWriter(ctx context.Context, ownerID string, o *ownerState) error {
	if o.conn != nil {
		return nil
	}
	s.evictWriters(o)
	connector, err := duckdb.NewConnector(s.Path(ownerID)+"?threads=1", nil)
	if err != nil {
		return fmt.Errorf("duck: open snapshot of %s: %w", ownerID, err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		return fmt.Errorf("duck: open snapshot of %s: %w", ownerID, err)
	}
	type step struct{ what, ddl string }
	var steps []step
	for _, t := range userTables {
		steps = append(steps, step{"create " + t.name, fmt.Sprintf(t.ddl, "main")})
	}
	steps = append(steps, step{"add traces.contribute", tracesContributeDDL}, step{"add steps usage columns", stepsUsageDDL},
		step{"add annotations criterion columns", annotationsCriteriaDDL}, step{"add annotations.member_id", annotationsMemberDDL},
		step{"create _applied", appliedDDL})
	for _, st := range steps {
		if _, err := conn.ExecContext(ctx, st.ddl); err != nil {
			_ = conn.Close()
			_ = db.Close()
			return fmt.Errorf("duck: %s: %w", st.what, err)
		}
	}
	o.db, o.conn = db, conn
	s.mu.Lock()
	o.open = true
	s.mu.Unlock()
	return nil
}

// evictWriters closes least-recently-used writers beyond MaxOpenWriters,
// counting keep, which is about to open. Owners busy right now are skipped
// (TryLock), so this never blocks and never deadlocks.
func (s *Snapshots) evictWriters(keep *ownerState) {
	for {
		s.mu.Lock()
		open := 1
		var victim *ownerState
		for _, o := range s.owners {
			if o == keep || !o.open {
				continue
			}
			open++
			if victim == nil || o.lastUse < victim.lastUse {
				victim = o
			}
		}
		s.mu.Unlock()
		if open <= s.opts.MaxOpenWriters || victim == nil || !victim.rw.TryLock() {
			return
		}
		_ = s.closeWriter(victim)
		victim.rw.Unlock()
	}
}

// closeWriter closes o's writer instance; DuckDB checkpoints on close. The
// caller holds o.rw exclusively.
func (s *Snapshots) closeWriter(o *ownerState) error {
	if o.conn == nil {
		return nil
	}
	err := errors.Join(o.conn.Close(), o.db.Close())
	o.conn, o.db = nil, nil
	s.mu.Lock()
	o.open = false
	s.mu.Unlock()
	return err
}

// Apply runs fn in one DuckDB transaction on the owner's file together with
// recording eventID, so the projection can consume at-least-once delivery: a
// duplicate event returns applied=false and changes nothing. An error from fn
// rolls everything back, the event id included, so a retry re-applies it.
func (s *Snapshots) Apply(ctx context.Context, ownerID, eventID string, fn func(tx *Tx) error) (applied bool, err error) {
	n, err := s.ApplyBatch(ctx, ownerID, []string{eventID}, func(tx *Tx, _ []int) error { return fn(tx) })
	return n == 1, err
}

// ApplyBatch is Apply for several events of one owner in one transaction,
// which is what makes bulk imports fast: DuckDB pays per commit and per
// statement, not per row. fn gets the positions (into eventIDs, ascending) of
// the events not applied before — ids already in `_applied` and repeats
// within the batch are left out — and must apply exactly those, in order. It
// is not called when none is fresh. It returns how many were fresh; on any
// error nothing of the batch is recorded.
func (s *Snapshots) ApplyBatch(ctx context.Context, ownerID string, eventIDs []string, fn func(tx *Tx, fresh []int) error) (applied int, err error) {
	if len(eventIDs) == 0 {
		return 0, nil
	}
	if slices.Contains(eventIDs, "") {
		return 0, errors.New("duck: empty event id")
	}
	o, err := s.owner(ownerID)
	if err != nil {
		return 0, err
	}
	o.rw.Lock()
	defer o.rw.Unlock()
	if err := s.openWriter(ctx, ownerID, o); err != nil {
		return 0, err
	}
	conn := o.conn
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		// A connection that cannot begin is suspect; reopen next time.
		_ = s.closeWriter(o)
		return 0, fmt.Errorf("duck: begin: %w", err)
	}
	done := false
	defer func() {
		if done {
			return
		}
		if _, rbErr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rbErr != nil {
			_ = s.closeWriter(o)
		}
	}()
	seen, err := among(ctx, conn, "_applied", "event_id", eventIDs)
	if err != nil {
		return 0, fmt.Errorf("duck: look up applied events: %w", err)
	}
	fresh := make([]int, 0, len(eventIDs))
	ids := make([]any, 0, len(eventIDs))
	for i, id := range eventIDs {
		if seen[id] {
			continue
		}
		seen[id] = true // a repeat later in the batch is a duplicate too
		fresh = append(fresh, i)
		ids = append(ids, id)
	}
	if len(fresh) == 0 {
		return 0, nil
	}
	for chunk := range slices.Chunk(ids, idChunk) {
		if _, err := conn.ExecContext(ctx, "INSERT INTO main._applied VALUES "+valueRows(len(chunk), "(?)"), chunk...); err != nil {
			return 0, fmt.Errorf("duck: record events: %w", err)
		}
	}
	tx := &Tx{conn: conn, traces: map[string]bool{}, annotations: map[string]bool{}}
	if err := fn(tx, fresh); err != nil {
		return 0, err
	}
	// What the owner's replica needs to follow this change, read inside the
	// transaction (nil: rebuild it on the next query instead).
	d, err := s.captureDelta(ctx, o, tx)
	if err != nil {
		return 0, err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, fmt.Errorf("duck: commit: %w", err)
	}
	done = true
	s.advance(ctx, o, d)
	return len(fresh), nil
}

// idChunk bounds the parameters of one statement listing event ids.
const idChunk = 1000

// changed records a committed change of o's snapshot: replicas built before
// it are stale, and the current one is dropped at once (after its running
// queries) rather than holding memory until the next query replaces it.
func (s *Snapshots) changed(o *ownerState) {
	o.version.Add(1)
	s.mu.Lock()
	s.retireLocked(o)
	s.mu.Unlock()
}
