package duck

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// Options tunes a Snapshots. The zero value gives the production settings of
// DESIGN §10; tests shorten Timeout.
type Options struct {
	// Timeout bounds one query, loading included (default 10 s). On expiry
	// DuckDB is interrupted and the caller gets a ValidationError.
	Timeout time.Duration
	// MaxRows caps the rows a query returns (default 1000); more set Truncated.
	MaxRows int
	// MemoryLimit is DuckDB's memory_limit for one query sandbox (default
	// "2GB"): the copied tables and the query's working set must fit, since
	// spilling to disk is disabled (it would create files).
	MemoryLimit string
	// Threads is DuckDB's thread count per sandbox (default 2).
	Threads int
	// Load chooses how a sandbox gets the owner's rows (default LoadCopy).
	Load LoadMode
	// Prewarm is how many blank sandboxes are kept ready (default 2; -1 for
	// none). Starting a DuckDB instance costs ~7 ms, which dominates small
	// queries; a blank instance has never held anyone's data, so handing it
	// out keeps "a fresh database per query" while taking the start off the
	// request path.
	Prewarm int
	// MaxOpenWriters bounds how many owner files stay open for writing
	// (default 32); the least recently used one is closed (checkpointed) when
	// another must open.
	MaxOpenWriters int
}

// LoadMode says how a query sandbox gets the owner's rows.
type LoadMode int

const (
	// LoadCopy attaches the owner file read-only, copies the user tables into
	// the sandbox's memory and detaches before the user's SQL runs. Only the
	// five user tables exist afterwards: no file path, no `_applied`. This is
	// the default because nothing but the caller's rows is reachable.
	LoadCopy LoadMode = iota
	// LoadAttach keeps the owner file attached read-only for the query and
	// exposes the user tables as views. It avoids the copy (an order of
	// magnitude faster on a million steps) but the user can see the file path
	// (duckdb_databases(), the allowed_paths setting) and the `_applied` event
	// ids of their own snapshot. Opt in only if that is acceptable.
	LoadAttach
)

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxRows <= 0 {
		o.MaxRows = 1000
	}
	if o.MemoryLimit == "" {
		o.MemoryLimit = "2GB"
	}
	if o.Threads <= 0 {
		o.Threads = 2
	}
	if o.Prewarm == 0 {
		o.Prewarm = 2
	}
	if o.Prewarm < 0 {
		o.Prewarm = 0
	}
	if o.MaxOpenWriters <= 0 {
		o.MaxOpenWriters = 32
	}
	return o
}

// Snapshots owns the per-owner DuckDB files under one directory
// (`<dir>/<owner_id>.duckdb`): the snapshot projection writes them through
// Apply, and Query reads them into throwaway sandboxes. One process must own
// the directory: DuckDB files are single-writer.
type Snapshots struct {
	dir  string
	opts Options

	mu      sync.Mutex
	owners  map[string]*ownerState
	closed  bool
	pool    chan *sandbox
	stop    chan struct{}
	bg      sync.WaitGroup
	useTick uint64
}

// ownerState serializes access to one owner file. Writers hold rw
// exclusively; a query holds it shared while it reads the file, so a reader
// never sees a half-written file and the writer's DuckDB never checkpoints
// under a reader.
type ownerState struct {
	rw   sync.RWMutex
	db   *sql.DB   // the writer's DuckDB instance; nil while closed (guarded by rw)
	conn *sql.Conn // its single connection (guarded by rw)

	// guarded by Snapshots.mu, for choosing which writer to close
	lastUse uint64
	open    bool
}

// ownerIDPattern keeps owner ids safe as file names: the id becomes a path.
var ownerIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// New opens (creating if needed) the snapshot directory.
func New(dir string, opts Options) (*Snapshots, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("duck: create snapshot dir: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("duck: snapshot dir: %w", err)
	}
	s := &Snapshots{
		dir:    abs,
		opts:   opts.withDefaults(),
		owners: map[string]*ownerState{},
		stop:   make(chan struct{}),
	}
	if s.opts.Prewarm > 0 {
		s.pool = make(chan *sandbox, s.opts.Prewarm)
		s.bg.Add(1)
		go s.fillPool()
	}
	return s, nil
}

// Close closes every open owner file (checkpointing it) and the blank
// sandboxes. Queries and Applies after Close fail.
func (s *Snapshots) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	owners := make([]*ownerState, 0, len(s.owners))
	for _, o := range s.owners {
		owners = append(owners, o)
	}
	s.mu.Unlock()
	close(s.stop)
	s.bg.Wait()
	if s.pool != nil {
	drain:
		for {
			select {
			case sb := <-s.pool:
				sb.close()
			default:
				break drain
			}
		}
	}
	var errs []error
	for _, o := range owners {
		o.rw.Lock()
		errs = append(errs, s.closeWriter(o))
		o.rw.Unlock()
	}
	return errors.Join(errs...)
}

// Path is where an owner's snapshot file lives. Exposed for operations
// (backups, `critic replay` dropping a projection), never shown to users.
func (s *Snapshots) Path(ownerID string) string {
	return filepath.Join(s.dir, ownerID+".duckdb")
}

func checkOwner(ownerID string) error {
	if !ownerIDPattern.MatchString(ownerID) {
		return fmt.Errorf("duck: invalid owner id %q", ownerID)
	}
	return nil
}

func (s *Snapshots) owner(ownerID string) (*ownerState, error) {
	if err := checkOwner(ownerID); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("duck: snapshots closed")
	}
	o := s.owners[ownerID]
	if o == nil {
		o = &ownerState{}
		s.owners[ownerID] = o
	}
	s.useTick++
	o.lastUse = s.useTick
	return o, nil
}

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
	for _, t := range userTables {
		if _, err := conn.ExecContext(ctx, fmt.Sprintf(t.ddl, "main")); err != nil {
			_ = conn.Close()
			_ = db.Close()
			return fmt.Errorf("duck: create %s: %w", t.name, err)
		}
	}
	if _, err := conn.ExecContext(ctx, appliedDDL); err != nil {
		_ = conn.Close()
		_ = db.Close()
		return fmt.Errorf("duck: create _applied: %w", err)
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
	if eventID == "" {
		return false, errors.New("duck: empty event id")
	}
	o, err := s.owner(ownerID)
	if err != nil {
		return false, err
	}
	o.rw.Lock()
	defer o.rw.Unlock()
	if err := s.openWriter(ctx, ownerID, o); err != nil {
		return false, err
	}
	conn := o.conn
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		// A connection that cannot begin is suspect; reopen next time.
		_ = s.closeWriter(o)
		return false, fmt.Errorf("duck: begin: %w", err)
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
	res, err := conn.ExecContext(ctx, "INSERT INTO main._applied VALUES (?) ON CONFLICT DO NOTHING", eventID)
	if err != nil {
		return false, fmt.Errorf("duck: record event: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	if err := fn(&Tx{conn: conn}); err != nil {
		return false, err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return false, fmt.Errorf("duck: commit: %w", err)
	}
	done = true
	return true, nil
}

// Reset deletes an owner's snapshot file, for `critic replay` rebuilding the
// projection from the log. Later Applies start from empty tables.
func (s *Snapshots) Reset(ownerID string) error {
	o, err := s.owner(ownerID)
	if err != nil {
		return err
	}
	o.rw.Lock()
	defer o.rw.Unlock()
	if err := s.closeWriter(o); err != nil {
		return err
	}
	var errs []error
	for _, suffix := range []string{"", ".wal"} {
		if err := os.Remove(s.Path(ownerID) + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Tx is the handle fn gets inside Apply: row-level helpers the snapshot
// projection needs, all in the event's transaction. It is only valid during
// fn.
type Tx struct {
	conn *sql.Conn
}

// TraceRow is one row of `traces`. JSON fields take any value encoding/json
// accepts (json.RawMessage passes through); nil is SQL NULL.
type TraceRow struct {
	ID, ExternalID, Title, SourceFormat, SourceID string
	StepCount                                     int
	Metadata                                      any
	CreatedAt, UpdatedAt                          time.Time
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
}

// ScoreRow is one row of `scores`: a raw trace reward from one model.
type ScoreRow struct {
	TraceID, RewardModelID, RewardModelName string
	Score                                   float64
	CreatedAt                               time.Time
}

// ActionScoreRow is one row of `action_scores`.
type ActionScoreRow struct {
	TraceID, StepID                string
	StepIndex                      int
	RewardModelID, RewardModelName string
	Score, Credit                  float64
	CreatedAt                      time.Time
}

// Exec runs one trusted statement in the transaction, for changes the
// helpers do not cover (a title change, say). Never pass user input as SQL.
func (t *Tx) Exec(ctx context.Context, query string, args ...any) error {
	_, err := t.conn.ExecContext(ctx, query, args...)
	return err
}

// UpsertTrace inserts or replaces the trace row with r.ID.
func (t *Tx) UpsertTrace(ctx context.Context, r TraceRow) error {
	meta, err := jsonText(r.Metadata)
	if err != nil {
		return fmt.Errorf("duck: trace %s metadata: %w", r.ID, err)
	}
	if err := t.Exec(ctx, "DELETE FROM main.traces WHERE id = ?", r.ID); err != nil {
		return err
	}
	return t.Exec(ctx, `INSERT INTO main.traces VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, nullString(r.ExternalID), nullString(r.Title), nullString(r.SourceFormat), nullString(r.SourceID),
		r.StepCount, meta, nullTime(r.CreatedAt), nullTime(r.UpdatedAt))
}

// DeleteTrace removes a trace and every row that hangs off it.
func (t *Tx) DeleteTrace(ctx context.Context, traceID string) error {
	for _, table := range []string{"steps", "annotations", "scores", "action_scores"} {
		if err := t.Exec(ctx, "DELETE FROM main."+table+" WHERE trace_id = ?", traceID); err != nil {
			return err
		}
	}
	return t.Exec(ctx, "DELETE FROM main.traces WHERE id = ?", traceID)
}

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
	return t.conn.Raw(func(dc any) error {
		a, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "main", "steps")
		if err != nil {
			return fmt.Errorf("duck: steps appender: %w", err)
		}
		for i, st := range steps {
			if i%4096 == 0 {
				if err := ctx.Err(); err != nil {
					_ = a.Close()
					return err
				}
			}
			in, err := jsonRaw(st.ToolInput)
			if err != nil {
				_ = a.Close()
				return fmt.Errorf("duck: step %s tool_input: %w", st.ID, err)
			}
			meta, err := jsonRaw(st.Metadata)
			if err != nil {
				_ = a.Close()
				return fmt.Errorf("duck: step %s metadata: %w", st.ID, err)
			}
			if err := a.AppendRow(st.ID, st.TraceID, int32(st.Index), st.Role, st.Content,
				nullString(st.ToolName), in, nullString(st.ToolCallID), meta); err != nil {
				_ = a.Close()
				return fmt.Errorf("duck: append step %s: %w", st.ID, err)
			}
		}
		return a.Close()
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
	return t.Exec(ctx, `INSERT INTO main.annotations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.TraceID, derefString(r.StepID), derefInt(r.StepIndex), derefInt(r.Rating), derefString(r.Comment),
		quote, r.LabelError, derefString(r.LabelErrorNote), nullString(r.AuthorID), nullString(r.AuthorName),
		nullTime(r.CreatedAt))
}

// DeleteAnnotation removes one annotation.
func (t *Tx) DeleteAnnotation(ctx context.Context, annotationID string) error {
	return t.Exec(ctx, "DELETE FROM main.annotations WHERE id = ?", annotationID)
}

// InsertScore records a trace reward. Scores are a history (one row per
// scoring), so this appends; DeleteScores clears a trace's history.
func (t *Tx) InsertScore(ctx context.Context, r ScoreRow) error {
	return t.Exec(ctx, `INSERT INTO main.scores VALUES (?, ?, ?, ?, ?)`,
		r.TraceID, r.RewardModelID, nullString(r.RewardModelName), r.Score, nullTime(r.CreatedAt))
}

// DeleteScores clears a trace's trace-level scores (for a reimport).
func (t *Tx) DeleteScores(ctx context.Context, traceID string) error {
	return t.Exec(ctx, "DELETE FROM main.scores WHERE trace_id = ?", traceID)
}

// InsertActionScores bulk-appends action scores (one scoring run).
func (t *Tx) InsertActionScores(ctx context.Context, rows []ActionScoreRow) error {
	if len(rows) == 0 {
		return nil
	}
	return t.conn.Raw(func(dc any) error {
		a, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "main", "action_scores")
		if err != nil {
			return fmt.Errorf("duck: action_scores appender: %w", err)
		}
		for _, r := range rows {
			if err := a.AppendRow(r.TraceID, r.StepID, int32(r.StepIndex), r.RewardModelID,
				nullString(r.RewardModelName), r.Score, r.Credit, nullTime(r.CreatedAt)); err != nil {
				_ = a.Close()
				return fmt.Errorf("duck: append action score: %w", err)
			}
		}
		return a.Close()
	})
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

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func derefString(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func derefInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
