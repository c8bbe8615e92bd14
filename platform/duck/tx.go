package duck

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// Tx is the handle fn gets inside Apply: row-level helpers the snapshot
// projection needs, all in the event's transaction. It is only valid during
// fn.
//
// fn says which rows it changed with Touch and TouchAnnotation, so the
// owner's query replica can be updated by copying just those rows instead
// of being rebuilt from the whole file (see captureDelta). A transaction
// that touches nothing is taken to have changed anything: the replica is
// rebuilt on the next query.
type Tx struct {
	conn        *sql.Conn
	traces      map[string]bool
	annotations map[string]bool
	// all is set by TouchAll: the change is not trace- or annotation-keyed.
	all bool
}

// Touch records that rows of these traces changed in any user table (their
// traces, steps, annotations, scores, action_scores, step_labels and
// task_scores rows are copied to the replica).
func (t *Tx) Touch(traceIDs ...string) {
	for _, id := range traceIDs {
		t.traces[id] = true
	}
}

// TouchAll records a change no Touch describes (the account's criteria):
// the replica is rebuilt on the next query.
func (t *Tx) TouchAll() { t.all = true }

// TouchAnnotation records that only these annotation rows changed.
func (t *Tx) TouchAnnotation(ids ...string) {
	for _, id := range ids {
		t.annotations[id] = true
	}
}

// TraceRow is one row of `traces`. JSON fields take any value encoding/json
// accepts (json.RawMessage passes through); nil is SQL NULL.
type TraceRow struct {
	ID, ExternalID, Title, SourceFormat, SourceID string
	StepCount                                     int
	Metadata                                      any
	CreatedAt, UpdatedAt                          time.Time
	// Contribute is the trace's consent to train the shared evaluator.
	Contribute bool
}

// StepRow is one row of `steps`; Index is zero-based.
type StepRow struct {
	ID, TraceID string
	Index       int
	Role        string
	Content     string
	ToolName    string
	ToolInput   any
	ToolCallID  string
	Metadata    any
	// Model and the token counts are the producing LLM call's ("" and nil
	// when the source recorded none).
	Model                                                string
	InputTokens, OutputTokens, TotalTokens, CachedTokens *int32
}

// AnnotationRow is one row of `annotations`. Nil pointers are SQL NULL:
// a trace-level annotation has no StepID/StepIndex, a comment-only one no
// Rating.
type AnnotationRow struct {
	ID, TraceID    string
	StepID         *string
	StepIndex      *int
	Rating         *int
	Comment        *string
	Quote          any
	LabelError     bool
	LabelErrorNote *string
	AuthorID       string
	AuthorName     string
	CreatedAt      time.Time
	// CriterionID and Value are a criterion's value (nil for ratings and
	// comments); Value is its text (yes, a label name, 4).
	CriterionID, Value *string
}

// Exec runs one trusted statement in the transaction, for changes the
// helpers do not cover (a title change, say). Never pass user input as SQL.
func (t *Tx) Exec(ctx context.Context, query string, args ...any) error {
	_, err := t.conn.ExecContext(ctx, query, args...)
	return err
}

// DeleteTrace removes a trace and every row that hangs off it.
func (t *Tx) DeleteTrace(ctx context.Context, traceID string) error {
	return t.DeleteTraces(ctx, []string{traceID})
}

// InsertTraces bulk-appends trace rows through DuckDB's appender. The ids
// must not exist yet (see ExistingTraces and DeleteTraces): a bulk import
// then costs one appender per batch instead of two statements per trace.
func (t *Tx) InsertTraces(ctx context.Context, rows []TraceRow) error {
	if len(rows) == 0 {
		return nil
	}
	return t.appendRows("traces", len(rows), func(i int, add func(...driver.Value) error) error {
		r := rows[i]
		meta, err := jsonRaw(r.Metadata)
		if err != nil {
			return fmt.Errorf("duck: trace %s metadata: %w", r.ID, err)
		}
		if err := add(r.ID, NullString(r.ExternalID), NullString(r.Title), NullString(r.SourceFormat),
			NullString(r.SourceID), int32(r.StepCount), meta, nullTime(r.CreatedAt), nullTime(r.UpdatedAt), r.Contribute); err != nil {
			return fmt.Errorf("duck: append trace %s: %w", r.ID, err)
		}
		return nil
	})
}

// appendRows bulk-inserts n rows into table through DuckDB's appender: row
// adds the i-th row with add, and an error from it ends the append.
func (t *Tx) appendRows(table string, n int, row func(i int, add func(...driver.Value) error) error) error {
	return t.conn.Raw(func(dc any) error {
		a, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "main", table)
		if err != nil {
			return fmt.Errorf("duck: %s appender: %w", table, err)
		}
		for i := range n {
			if err := row(i, a.AppendRow); err != nil {
				_ = a.Close()
				return err
			}
		}
		return a.Close()
	})
}

// ExistingTraces returns which of ids have a row in `traces`.
func (t *Tx) ExistingTraces(ctx context.Context, ids []string) (map[string]bool, error) {
	return among(ctx, t.conn, "traces", "id", ids)
}

// among returns which of ids are in table's column, asking idChunk ids at a
// time.
func among(ctx context.Context, db querier, table, column string, ids []string) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	for chunk := range slices.Chunk(ids, idChunk) {
		if err := addStrings(ctx, db, out, "SELECT "+column+" FROM main."+table+" WHERE "+column+" IN ("+
			placeholders(len(chunk))+")", anySlice(chunk)...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DeleteTraces is DeleteTrace for many traces with one scan per table.
func (t *Tx) DeleteTraces(ctx context.Context, ids []string) error {
	for c := range slices.Chunk(ids, idChunk) {
		chunk := anySlice(c)
		in := " IN (" + placeholders(len(chunk)) + ")"
		for _, table := range []string{"steps", "annotations", "scores", "action_scores", "step_labels", "task_scores", "evaluator_scores", "_step_labels", "_step_quality_checks"} {
			if err := t.Exec(ctx, "DELETE FROM main."+table+" WHERE trace_id"+in, chunk...); err != nil {
				return err
			}
		}
		if err := t.Exec(ctx, "DELETE FROM main.traces WHERE id"+in, chunk...); err != nil {
			return err
		}
	}
	return nil
}

// StepIndex returns the zero-based position of a step of a trace, or nil if
// the trace has no such step (any more).
func (t *Tx) StepIndex(ctx context.Context, traceID, stepID string) (*int, error) {
	var idx int
	err := t.conn.QueryRowContext(ctx, "SELECT step_index FROM main.steps WHERE trace_id = ? AND id = ? LIMIT 1",
		traceID, stepID).Scan(&idx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &idx, nil
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

// ReplaceSteps makes steps the trace's whole step list (a re-import or an
// OTel rebuild) and sets traces.step_count. Action scores of the trace go
// with the old steps, as the spec's reimport rule says; annotations are
// removed by their own events.
func (t *Tx) ReplaceSteps(ctx context.Context, traceID string, steps []StepRow) error {
	if err := t.Exec(ctx, "DELETE FROM main.steps WHERE trace_id = ?", traceID); err != nil {
		return err
	}
	if err := t.Exec(ctx, "DELETE FROM main.action_scores WHERE trace_id = ?", traceID); err != nil {
		return err
	}
	if err := t.AppendSteps(ctx, steps); err != nil {
		return err
	}
	return t.Exec(ctx, "UPDATE main.traces SET step_count = ? WHERE id = ?", len(steps), traceID)
}

// AppendSteps bulk-inserts steps (a growing session, or the body of
// ReplaceSteps) through DuckDB's appender: a million steps load in seconds.
// It does not touch traces.step_count.
func (t *Tx) AppendSteps(ctx context.Context, steps []StepRow) error {
	if len(steps) == 0 {
		return nil
	}
	return t.appendRows("steps", len(steps), func(i int, add func(...driver.Value) error) error {
		st := steps[i]
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		in, err := jsonRaw(st.ToolInput)
		if err != nil {
			return fmt.Errorf("duck: step %s tool_input: %w", st.ID, err)
		}
		meta, err := jsonRaw(st.Metadata)
		if err != nil {
			return fmt.Errorf("duck: step %s metadata: %w", st.ID, err)
		}
		if err := add(st.ID, st.TraceID, int32(st.Index), st.Role, st.Content,
			NullString(st.ToolName), in, NullString(st.ToolCallID), meta,
			NullString(st.Model), Deref(st.InputTokens), Deref(st.OutputTokens), Deref(st.TotalTokens), Deref(st.CachedTokens)); err != nil {
			return fmt.Errorf("duck: append step %s: %w", st.ID, err)
		}
		return nil
	})
}

// UpsertAnnotation inserts or replaces the annotation row with r.ID (added or
// edited).
func (t *Tx) UpsertAnnotation(ctx context.Context, r AnnotationRow) error {
	quote, err := jsonText(r.Quote)
	if err != nil {
		return fmt.Errorf("duck: annotation %s quote: %w", r.ID, err)
	}
	if err := t.DeleteAnnotation(ctx, r.ID); err != nil {
		return err
	}
	// member_id is the author's id: the member who made it (issue 36).
	return t.Exec(ctx, `INSERT INTO main.annotations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.TraceID, Deref(r.StepID), Deref(r.StepIndex), Deref(r.Rating), Deref(r.Comment),
		quote, r.LabelError, Deref(r.LabelErrorNote), NullString(r.AuthorID), NullString(r.AuthorName),
		nullTime(r.CreatedAt), Deref(r.CriterionID), Deref(r.Value), NullString(r.AuthorID))
}

// DeleteAnnotation removes one annotation.
func (t *Tx) DeleteAnnotation(ctx context.Context, annotationID string) error {
	return t.Exec(ctx, "DELETE FROM main.annotations WHERE id = ?", annotationID)
}

// DeleteScores clears a trace's trace-level scores (for a reimport).
func (t *Tx) DeleteScores(ctx context.Context, traceID string) error {
	return t.Exec(ctx, "DELETE FROM main.scores WHERE trace_id = ?", traceID)
}

// jsonRaw encodes v for the appender, which marshals what it gets: a
// json.RawMessage passes through verbatim; nil stays SQL NULL.
func jsonRaw(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if len(x) == 0 {
			return nil, nil
		}
		if !json.Valid(x) {
			return nil, errors.New("invalid JSON")
		}
		return x, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(b), nil
}

// jsonText encodes v as JSON text for a statement parameter (cast to JSON by
// DuckDB); nil stays SQL NULL.
func jsonText(v any) (any, error) {
	r, err := jsonRaw(v)
	if r == nil || err != nil {
		return nil, err
	}
	return string(r.(json.RawMessage)), nil
}

// NullString is s as a statement argument, NULL when s is "".
func NullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// querier runs a query: a connection or a pool.
type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// each runs query and calls fn after scanning each row into scans (plain
// values: the same variables are scanned into for every row): the one rows
// loop of database/sql here, as pg.Each is pgx's.
func each(ctx context.Context, db querier, scans []any, fn func() error, query string, args ...any) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(scans...); err != nil {
			return err
		}
		if err := fn(); err != nil {
			return err
		}
	}
	return rows.Err()
}

// addStrings adds the one-column rows of query to set: the loop of every
// lookup that answers which of some ids exist.
func addStrings(ctx context.Context, db querier, set map[string]bool, query string, args ...any) error {
	var s string
	return each(ctx, db, []any{&s}, func() error {
		set[s] = true
		return nil
	}, query, args...)
}

// Deref is *p as a statement argument, NULL when p is nil.
func Deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}
