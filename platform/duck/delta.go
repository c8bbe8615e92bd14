package duck

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// delta is one committed change of an owner's snapshot in the form a
// replica applies it: for each user table, the rows matching the change's
// predicate (the touched traces; annotations also by id) are replaced by the
// rows matching it in the file after the change.
//
// # Design decision: follow the file, do not re-run the projection
//
// The first query after any write used to rebuild the owner's replica — a
// copy of every table, 0.8–1.8 s with ~10,000 annotations on a million
// steps. Re-running the projection's statements on the replica was rejected:
// they read hidden tables (revisions, stored labels, `_applied`) that the
// replica must not hold. Attaching the file to the replica is impossible
// once it is locked down (external access cannot be turned back on). So the
// rows the change produced are read from the file inside the writing
// transaction and inserted into the replica over its own connection, in
// one replica transaction: a query sees the replica before or after the
// change, never between. Whether the replica equals a fresh copy after every
// event is what TestReplicaFollowsEveryChange checks.
type delta struct {
	version     uint64 // the owner's snapshot version after it (set by advance)
	traces      []any
	annotations []any
	rows        map[string][][]any // table → rows, JSON columns as their text
}

// Bounds of an incremental update; a bigger change (a bulk import) marks the
// replica stale and the next query rebuilds it, which is faster at that size.
const (
	deltaMaxTraces = 256
	deltaMaxRows   = 10_000
)

// column is one column of a user table, in table order.
type column struct {
	name string
	json bool
}

// tableColumns is every user table's columns, read from its DDL (so a
// column added to schema.go is followed without a second list).
var tableColumns = func() map[string][]column {
	re := regexp.MustCompile(`(?m)(\w+) (VARCHAR|INTEGER|JSON|TIMESTAMPTZ|DOUBLE|BOOLEAN)\b`)
	out := map[string][]column{}
	for _, t := range userTables {
		body := t.ddl[strings.Index(t.ddl, "(")+1:]
		for _, m := range re.FindAllStringSubmatch(body, -1) {
			out[t.name] = append(out[t.name], column{name: m[1], json: m[2] == "JSON"})
		}
	}
	return out
}()

// predicate is the WHERE clause (and its arguments) of the rows of table
// that d replaces; "" when d leaves the table alone.
func (d *delta) predicate(table string) (string, []any) {
	in := func(col string, ids []any) string { return col + " IN (" + placeholders(len(ids)) + ")" }
	switch {
	case table == "traces":
		if len(d.traces) == 0 {
			return "", nil
		}
		return in("id", d.traces), d.traces
	case table == "criteria", table == "members":
		return "", nil // not trace-keyed: a criteria or members change rebuilds (TouchAll)
	case table == "annotations":
		var parts []string
		var args []any
		if len(d.traces) > 0 {
			parts, args = append(parts, in("trace_id", d.traces)), append(args, d.traces...)
		}
		if len(d.annotations) > 0 {
			parts, args = append(parts, in("id", d.annotations)), append(args, d.annotations...)
		}
		return strings.Join(parts, " OR "), args
	case len(d.traces) > 0:
		return in("trace_id", d.traces), d.traces
	}
	return "", nil
}

// captureDelta reads, inside the writing transaction, the rows the owner's
// current replica needs to follow it. It returns nil — rebuild instead —
// when there is no current replica, when fn said nothing about what it
// touched, or when the change is too big.
func (s *Snapshots) captureDelta(ctx context.Context, o *ownerState, tx *Tx) (*delta, error) {
	if s.opts.Load != LoadReplica {
		return nil, nil
	}
	s.mu.Lock()
	r := o.rep
	current := r != nil && !r.retired && r.version == o.version.Load() && o.building == nil
	s.mu.Unlock()
	if !current || tx.all || len(tx.traces)+len(tx.annotations) == 0 ||
		len(tx.traces) > deltaMaxTraces || len(tx.annotations) > 4*deltaMaxTraces {
		return nil, nil
	}
	d := &delta{rows: map[string][][]any{}, traces: anySlice(slices.Collect(maps.Keys(tx.traces))),
		annotations: anySlice(slices.Collect(maps.Keys(tx.annotations)))}
	total := 0
	for _, t := range userTables {
		pred, args := d.predicate(t.name)
		if pred == "" {
			continue
		}
		cols := tableColumns[t.name]
		sel := make([]string, len(cols))
		for i, c := range cols {
			sel[i] = c.name
			if c.json {
				sel[i] = c.name + "::VARCHAR"
			}
		}
		rows, err := tx.conn.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM main."+t.name+" WHERE "+pred, args...)
		if err != nil {
			return nil, fmt.Errorf("duck: read the change of %s: %w", t.name, err)
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				_ = rows.Close()
				return nil, err
			}
			d.rows[t.name] = append(d.rows[t.name], vals)
			if total++; total > deltaMaxRows {
				_ = rows.Close()
				return nil, nil
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// advance records a committed change of o's snapshot: the current replica
// follows it through d when it can, and is otherwise retired (rebuilt on
// the next query). The caller holds o.rw exclusively, so no other change
// and no replica build of o runs meanwhile.
func (s *Snapshots) advance(ctx context.Context, o *ownerState, d *delta) {
	if d == nil {
		s.changed(o)
		return
	}
	s.mu.Lock()
	r := o.rep
	ok := r != nil && !r.retired && r.version == o.version.Load() && o.building == nil
	if ok {
		r.refs++
	}
	s.mu.Unlock()
	if !ok {
		s.changed(o)
		return
	}
	err := r.apply(ctx, d)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(r)
	if err != nil || o.rep != r {
		o.version.Add(1)
		s.retireLocked(o)
		return
	}
	r.version = o.version.Add(1)
	if o.compressing && len(o.followed) < maxFollowed {
		d.version = r.version
		o.followed = append(o.followed, d)
	}
}

// maxFollowed bounds the deltas kept for a compressed copy in the making;
// beyond it the copy is dropped (the replica keeps serving uncompressed).
const maxFollowed = 1000

// apply replaces the rows d covers in one replica transaction, over the
// replica's own connection (never a user's).
func (r *replica) apply(ctx context.Context, d *delta) (err error) {
	if _, err := r.w.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_, _ = r.w.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	for _, t := range userTables {
		pred, args := d.predicate(t.name)
		if pred == "" {
			continue
		}
		if _, err := r.w.ExecContext(ctx, "DELETE FROM main."+t.name+" WHERE "+pred, args...); err != nil {
			return fmt.Errorf("duck: replica %s: %w", t.name, err)
		}
		if err := insertRows(ctx, r.w, t.name, len(tableColumns[t.name]), d.rows[t.name]); err != nil {
			return fmt.Errorf("duck: replica %s: %w", t.name, err)
		}
	}
	_, err = r.w.ExecContext(ctx, "COMMIT")
	return err
}

// insertRows inserts rows into table with multi-row VALUES statements.
func insertRows(ctx context.Context, conn *sql.Conn, table string, ncols int, rows [][]any) error {
	per := max(1, 900/ncols)
	row := "(" + placeholders(ncols) + ")"
	for chunk := range slices.Chunk(rows, per) {
		args := make([]any, 0, len(chunk)*ncols)
		for _, r := range chunk {
			for _, v := range r {
				if raw, ok := v.(json.RawMessage); ok {
					v = string(raw)
				}
				args = append(args, v)
			}
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO main."+table+" VALUES "+valueRows(len(chunk), row), args...); err != nil {
			return err
		}
	}
	return nil
}
