package duck

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/criticml/critic/domain"
)

// Result is what POST /query returns: `{columns, rows, truncated}`.
//
// Values are JSON-ready: integers and floats are numbers (NaN and ±Inf,
// which JSON cannot hold, become the strings "NaN", "Infinity",
// "-Infinity"); HUGEINT and DECIMAL are json.Number, so their exact digits
// are written as a JSON number; TIMESTAMP/TIMESTAMPTZ are RFC 3339 strings in
// UTC, DATE is "2006-01-02", TIME "15:04:05.999999"; BLOB is base64; UUID is
// its canonical string; INTERVAL is {months, days, micros}; JSON columns are
// parsed JSON; LIST/ARRAY are arrays, STRUCT objects, MAP an array of
// {key, value}, UNION its member's value.
type Result struct {
	Columns   []string `json:"columns"`
	Rows      [][]any  `json:"rows"`
	Truncated bool     `json:"truncated"`
}

// sandbox is one in-memory DuckDB: for LoadCopy/LoadAttach it serves exactly
// one query and is then closed, so nothing a query does can outlive it; for
// LoadReplica it becomes an owner's replica.
type sandbox struct {
	db   *sql.DB
	conn *sql.Conn
}

// newSandbox starts a blank in-memory DuckDB with the settings that must hold
// from the start: no spilling to disk (a temp directory would be a file the
// query creates), no extension installs or autoloads, resource caps. The
// secret and extension directories point under /dev/null, where nothing can
// exist, because their defaults (~/.duckdb/…) show the server's home in
// duckdb_settings() and in error messages.
func (s *Snapshots) newSandbox(ctx context.Context) (*sandbox, error) {
	connector, err := duckdb.NewConnector("", nil)
	if err != nil {
		return nil, fmt.Errorf("duck: start sandbox: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("duck: start sandbox: %w", err)
	}
	setup := fmt.Sprintf(`SET threads = %d; SET memory_limit = %s; SET temp_directory = '';
		SET autoinstall_known_extensions = false; SET autoload_known_extensions = false;
		SET allow_community_extensions = false; SET GLOBAL TimeZone = 'UTC';
		SET secret_directory = '/dev/null/secrets'; SET extension_directory = '/dev/null/extensions'`,
		s.opts.Threads, quoteString(s.opts.MemoryLimit))
	sb := &sandbox{db: db, conn: conn}
	if _, err := conn.ExecContext(ctx, setup); err != nil {
		sb.close()
		return nil, fmt.Errorf("duck: configure sandbox: %w", err)
	}
	return sb, nil
}

func (sb *sandbox) close() {
	_ = sb.conn.Close()
	_ = sb.db.Close()
}

// fillPool keeps Prewarm blank sandboxes ready until Close.
func (s *Snapshots) fillPool() {
	defer s.bg.Done()
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		sb, err := s.newSandbox(context.Background())
		if err != nil {
			// Query reports the error when it starts one itself.
			select {
			case <-s.stop:
				return
			case <-time.After(time.Second):
				continue
			}
		}
		select {
		case s.pool <- sb:
		case <-s.stop:
			sb.close()
			return
		}
	}
}

func (s *Snapshots) takeSandbox(ctx context.Context) (*sandbox, error) {
	if s.pool != nil {
		select {
		case sb := <-s.pool:
			return sb, nil
		default:
		}
	}
	return s.newSandbox(ctx)
}

// discard closes a used sandbox off the request path: closing an instance
// joins its threads and costs milliseconds the caller need not wait for.
func (s *Snapshots) discard(sb *sandbox) {
	go sb.close()
}

// Query runs one user SELECT over ownerID's snapshot (DESIGN §10). Each call
// runs in an in-memory DuckDB holding only that owner's user tables, locked
// down before the SQL is looked at: with LoadReplica (the default) a fresh
// connection to the owner's cached replica, rebuilt when the snapshot has
// changed since; with LoadCopy/LoadAttach a new DuckDB instance. Rejected
// statements, SQL errors, the time limit and the size limits come back as
// *domain.ValidationError with a message meant for the user; a full server
// as *domain.UnavailableError; other errors are internal. The time limit
// covers waiting for the owner's turn, building a replica, preparing and
// running.
func (s *Snapshots) Query(ctx context.Context, ownerID, query string) (*Result, error) {
	start := time.Now()
	res, err := s.boundedQuery(ctx, ownerID, query)
	if s.opts.OnQuery != nil {
		s.opts.OnQuery(time.Since(start), err)
	}
	return res, err
}

// boundedQuery applies the limits that hold before DuckDB sees the text
// (checkStatement), then takes the owner's turn and a process-wide slot.
func (s *Snapshots) boundedQuery(ctx context.Context, ownerID, query string) (*Result, error) {
	if err := checkStatement(query, s.opts.MaxStatementBytes, s.opts.MaxSetOperations); err != nil {
		return nil, err
	}
	o, err := s.owner(ownerID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	select {
	case o.turns <- struct{}{}:
	case <-ctx.Done():
		return nil, s.queryError(ctx, ctx.Err(), "")
	}
	release, err := s.takeSlot(ctx)
	if err != nil {
		<-o.turns
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		release()
		<-o.turns
		return nil, errors.New("duck: snapshots closed")
	}
	s.bg.Add(1)
	s.mu.Unlock()

	// The query runs on its own goroutine so the caller hears back at the
	// deadline even when DuckDB does not stop at once: the interrupt is
	// seen at DuckDB's next check, and constant folding has none. Until the
	// work really ends it keeps its owner's turn and its slot, so such
	// leftovers count against the limits like running queries.
	done := make(chan outcome, 1)
	go func() {
		defer s.bg.Done()
		defer func() { <-o.turns }()
		defer release()
		res, err := s.query(ctx, ownerID, o, query)
		done <- outcome{res, err}
	}()
	select {
	case out := <-done:
		return out.res, out.err
	case <-ctx.Done():
		if s.opts.OnOverrun != nil {
			go s.watchOverrun(done)
		}
		return nil, s.queryError(ctx, ctx.Err(), "")
	}
}

// overrunGrace is how long work may go on after its deadline before
// OnOverrun is told: an interrupt is seen within milliseconds wherever
// DuckDB checks for one.
const overrunGrace = 5 * time.Second

// watchOverrun calls OnOverrun when a query's work has not ended
// overrunGrace after its deadline (the query process then ends itself).
func (s *Snapshots) watchOverrun(done <-chan outcome) {
	t := time.NewTimer(overrunGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.opts.OnOverrun()
	}
}

// outcome is how a query's work ended.
type outcome struct {
	res *Result
	err error
}

// takeSlot waits up to QueueWait for one of the MaxConcurrent process-wide
// query slots; a server still full after that answers 503 naming the limit
// rather than queueing without bound.
func (s *Snapshots) takeSlot(ctx context.Context) (func(), error) {
	release := func() { <-s.slots }
	select {
	case s.slots <- struct{}{}:
		return release, nil
	default:
	}
	t := time.NewTimer(s.opts.QueueWait)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return release, nil
	case <-t.C:
		return nil, &domain.UnavailableError{Code: "query_capacity", RetryAfterSeconds: 1,
			Message: fmt.Sprintf("the server is running its limit of %d concurrent queries (all accounts together); retry shortly", s.opts.MaxConcurrent)}
	case <-ctx.Done():
		return nil, s.queryError(ctx, ctx.Err(), "")
	}
}

func (s *Snapshots) query(ctx context.Context, ownerID string, o *ownerState, query string) (*Result, error) {
	if s.opts.Load == LoadReplica {
		return s.queryReplica(ctx, ownerID, o, query)
	}

	sb, err := s.takeSandbox(ctx)
	if err != nil {
		return nil, s.queryError(ctx, err, "")
	}
	defer s.discard(sb)

	o.rw.RLock()
	locked := true
	unlock := func() {
		if locked {
			locked = false
			o.rw.RUnlock()
		}
	}
	defer unlock()
	if err := s.load(ctx, sb, ownerID, query, false); err != nil {
		return nil, s.queryError(ctx, err, "")
	}
	if s.opts.Load == LoadCopy {
		// The sandbox no longer reads the file: let the writer go on.
		unlock()
	}
	if err := s.lockDown(ctx, sb, s.opts.Load == LoadCopy); err != nil {
		return nil, s.queryError(ctx, err, "")
	}
	res, err := s.run(ctx, sb.conn, query)
	if err != nil {
		return nil, s.queryError(ctx, err, query)
	}
	return res, nil
}

// load puts the owner's user tables into the sandbox under their plain names.
// The tables are always created from our DDL first, so an owner without a file
// (nothing imported yet) sees the same empty schema as everyone. With all set
// (a replica) every table is copied whatever the query; otherwise LoadCopy
// copies only the tables the query may read.
func (s *Snapshots) load(ctx context.Context, sb *sandbox, ownerID, query string, all bool) error {
	path := s.Path(ownerID)
	_, statErr := os.Stat(path)
	exists := statErr == nil
	if statErr != nil && !errors.Is(statErr, os.ErrNotExist) {
		return fmt.Errorf("duck: snapshot of %s: %w", ownerID, statErr)
	}
	var b strings.Builder
	have := map[string]bool{}
	if exists {
		if _, err := sb.conn.ExecContext(ctx, fmt.Sprintf("ATTACH %s AS snap (READ_ONLY)", quoteString(path))); err != nil {
			return fmt.Errorf("duck: load snapshot of %s: %w", ownerID, err)
		}
		var err error
		if have, err = snapTables(ctx, sb); err != nil {
			return fmt.Errorf("duck: load snapshot of %s: %w", ownerID, err)
		}
	}
	lower := strings.ToLower(query)
	viewDeps := map[string]bool{} // tables a view named in the query reads
	for _, v := range userViews {
		if needsTable(lower, v.name) {
			for _, d := range v.deps {
				viewDeps[d] = true
			}
		}
	}
	for _, t := range userTables {
		switch {
		case exists && !have[t.name]:
			// A file written before this table existed: the table is empty
			// until the owner's next change (or a replay) creates it.
			b.WriteString(fmt.Sprintf(t.ddl, "main") + ";\n")
		case exists && s.opts.Load == LoadAttach && !all:
			fmt.Fprintf(&b, "CREATE VIEW main.%[1]s AS FROM snap.main.%[1]s;\n", t.name)
		case exists && (all || needsTable(lower, t.name) || viewDeps[t.name]):
			b.WriteString(fmt.Sprintf(t.ddl, "main") + ";\n")
			fmt.Fprintf(&b, "INSERT INTO main.%[1]s BY NAME FROM snap.main.%[1]s;\n", t.name)
		default:
			b.WriteString(fmt.Sprintf(t.ddl, "main") + ";\n")
		}
	}
	for _, v := range userViews {
		b.WriteString(v.ddl + ";\n")
	}
	if exists && (all || s.opts.Load == LoadCopy) {
		b.WriteString("DETACH snap;\n")
	}
	if _, err := sb.conn.ExecContext(ctx, b.String()); err != nil {
		return fmt.Errorf("duck: load snapshot of %s: %w", ownerID, err)
	}
	return nil
}

// snapTables lists the user tables present in the attached owner file.
func snapTables(ctx context.Context, sb *sandbox) (map[string]bool, error) {
	out := map[string]bool{}
	err := addStrings(ctx, sb.conn, out, `SELECT table_name FROM duckdb_tables() WHERE database_name = 'snap' AND schema_name = 'main'`)
	return out, err
}

// dynamicRefs are SQL fragments through which a query can reach a table
// without spelling its name (dynamic SQL, catalog views with row counts): a
// query containing one gets every table loaded.
var dynamicRefs = []string{"query", "duckdb_", "information_schema", "pragma", "pg_", "sqlite_", "_info"}

// needsTable says whether a LoadCopy sandbox must copy table for this query.
// Copying is the cost of a query, and a table can only be read through its
// name or a dynamicRefs function, so any query whose text (lowercased)
// contains neither gets the table empty. The test is a superset: "scores"
// also matches "action_scores", a comment mentioning "steps" copies steps.
func needsTable(lowerQuery, table string) bool {
	return strings.Contains(lowerQuery, table) ||
		slices.ContainsFunc(dynamicRefs, func(r string) bool { return strings.Contains(lowerQuery, r) })
}

// lockDown applies the settings of DESIGN §10 after loading: no files, no
// network (enable_external_access also covers ATTACH, COPY, read_*(), glob,
// http/s3 URLs, INSTALL/LOAD), and then lock_configuration so the user's SQL
// cannot SET any of it back.
func (s *Snapshots) lockDown(ctx context.Context, sb *sandbox, noFiles bool) error {
	stmts := "SET enable_external_access = false;\n"
	if noFiles {
		// Nothing is read from disk any more; refuse even allowed paths.
		stmts += "SET disabled_filesystems = 'LocalFileSystem';\n"
	}
	stmts += "SET lock_configuration = true;"
	if _, err := sb.conn.ExecContext(ctx, stmts); err != nil {
		return fmt.Errorf("duck: lock down sandbox: %w", err)
	}
	return nil
}

// run validates and executes the user's SQL on conn, preparing it once and
// inside the time limit.
//
// Validation uses the driver's non-context Prepare on purpose: PrepareContext,
// QueryContext and ExecContext execute every statement of a string but the
// last, so `SELECT 1; DROP TABLE steps` would drop the table before any check.
// Prepare refuses strings with more than one statement and executes nothing.
//
// Neither Prepare nor the driver's PrepareContext can be cancelled, and
// planning can take long (a wide UNION, heavy constant folding), so while
// run works an interrupter calls duckdb_interrupt on the connection once ctx
// ends (interruptOnDone): DuckDB's planner and executor stop at their next
// check. Constant folding does not check, so a statement like
// `list_sort(range(3e7))` still runs its folding to the end; it holds its
// owner's turn and its process-wide slot until then.
func (s *Snapshots) run(ctx context.Context, conn *sql.Conn, query string) (*Result, error) {
	var res *Result
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*duckdb.Conn)
		if !ok {
			return errors.New("duck: unexpected driver connection")
		}
		stop, err := interruptOnDone(ctx, c)
		if err != nil {
			return err
		}
		defer stop()
		stmt, err := s.prepareBounded(c, query)
		if err != nil {
			return err
		}
		defer stmt.Close()
		rows, err := stmt.QueryContext(ctx, nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		res, err = readRows(rows, s.opts.MaxRows, s.opts.MaxResultBytes)
		return err
	})
	return res, err
}

// interruptOnDone interrupts c's DuckDB connection when ctx ends, and again
// every 100 ms (DuckDB clears the flag between phases) until stop is called;
// stop returns once no interrupt can follow, so the connection is safe to
// reuse or close.
func interruptOnDone(ctx context.Context, c *duckdb.Conn) (stop func(), err error) {
	handle, err := connHandle(c)
	if err != nil {
		return nil, err
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			mapping.Interrupt(handle)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }, nil
}

// connHandle reads the DuckDB connection handle of a driver connection.
// duckdb-go (v2.10506.0) keeps it unexported and interrupts only execution
// on context cancellation, never Prepare; duckdb_interrupt on the handle is
// the C API's own way to stop a connection's work from another thread. The
// field is looked up by name and type, so a driver that changes it makes
// every query fail here (and the tests with it) instead of misbehaving.
func connHandle(c *duckdb.Conn) (mapping.Connection, error) {
	f := reflect.ValueOf(c).Elem().FieldByName("conn")
	if !f.IsValid() || f.Type() != reflect.TypeFor[mapping.Connection]() {
		return mapping.Connection{}, errors.New("duck: the DuckDB driver's connection handle is not where this version expects it; cannot bound query preparation")
	}
	return *(*mapping.Connection)(unsafe.Pointer(f.UnsafeAddr())), nil
}

// prepareBounded prepares the user's query once, as the statement that
// bounds its result: `SELECT * FROM (<query>) AS _critic_row WHERE <the
// row's JSON fits MaxRowBytes> LIMIT MaxRows+1`. The driver materializes
// whole results: the LIMIT lets DuckDB stop after the rows we return, and
// the row check fails a row too large to send inside DuckDB, under its
// memory limit, before the driver copies it into Go. DuckDB's parser first
// checks that the text as written is exactly one SELECT (writtenAsSelect,
// parse only), so the wrapper wraps a whole statement; the wrapper itself is
// checked like the user's SQL (prepareSelect). The user's text is prepared
// as written only when it does not parse (DuckDB's error then names the
// user's own positions), when the wrapper does not prepare, or when DuckDB
// renamed duplicate column names inside it; the result byte cap still
// holds then.
func (s *Snapshots) prepareBounded(conn *duckdb.Conn, query string) (*duckdb.Stmt, error) {
	switch err := writtenAsSelect(conn, query); {
	case err == nil:
		stmt, werr := prepareSelect(conn, boundedQuery(query, s.opts.MaxRows+1, s.opts.MaxRowBytes))
		if werr == nil {
			if !renamedDuplicates(stmt) {
				return stmt, nil
			}
			orig, err := prepareSelect(conn, query)
			if err != nil {
				_ = stmt.Close()
				return nil, err
			}
			if sameColumns(stmt, orig) {
				_ = orig.Close()
				return stmt, nil
			}
			_ = stmt.Close()
			return orig, nil
		}
		var de *duckdb.Error
		if errors.As(werr, &de) && de.Type == duckdb.ErrorTypeInterrupt {
			return nil, werr
		}
	case !errors.Is(err, errUnparsed):
		return nil, err
	}
	stmt, err := prepareSelect(conn, query)
	if err != nil {
		return nil, err
	}
	if err := writtenAsSelect(conn, query); err != nil {
		_ = stmt.Close()
		if errors.Is(err, errUnparsed) {
			err = errRewritten
		}
		return nil, err
	}
	return stmt, nil
}

// errNotSelect marks statements that parse but are not a single SELECT.
var errNotSelect = &domain.ValidationError{Code: "invalid_query", Message: "only a single SELECT statement is allowed"}

// prepareSelect prepares query with the non-context Prepare and accepts it
// only if it is exactly one SELECT-type statement without parameters. The
// caller checks it was written as a SELECT (writtenAsSelect).
func prepareSelect(conn driver.Conn, query string) (*duckdb.Stmt, error) {
	ds, err := conn.Prepare(query)
	if err != nil {
		if strings.Contains(err.Error(), "multi-statement") {
			return nil, errNotSelect
		}
		return nil, err
	}
	stmt, ok := ds.(*duckdb.Stmt)
	if !ok {
		_ = ds.Close()
		return nil, errors.New("duck: unexpected driver statement")
	}
	typ, err := stmt.StatementType()
	if err != nil || typ != duckdb.STATEMENT_TYPE_SELECT {
		_ = stmt.Close()
		if err != nil {
			return nil, err
		}
		return nil, errNotSelect
	}
	if stmt.NumInput() != 0 {
		_ = stmt.Close()
		return nil, &domain.ValidationError{Code: "invalid_query", Message: "query parameters ($1, ?) are not supported"}
	}
	return stmt, nil
}

// errRewritten refuses statements DuckDB turns into a SELECT on its own.
var errRewritten = &domain.ValidationError{Code: "invalid_query",
	Message: "only a single SELECT statement is allowed: PRAGMA, SHOW, DESCRIBE, SUMMARIZE, PIVOT and UNPIVOT statements are not (query the tables, or duckdb_tables()/duckdb_columns(), with a SELECT)"}

// errUnparsed is writtenAsSelect's answer for text DuckDB's parser refuses
// to serialize: a syntax error, or a statement other than a SELECT.
var errUnparsed = errors.New("duck: the statement does not parse as a SELECT")

// writtenAsSelect checks that query is a SELECT as the user wrote it, not a
// statement DuckDB rewrites into one: the prepared statement type alone says
// SELECT for `PRAGMA show_tables`, `SHOW`, `DESCRIBE` or `SUMMARIZE`, which
// run internal queries the sandbox never vetted. DuckDB's own parser decides,
// through json_serialize_sql (parse only, nothing runs): it refuses to
// serialize anything but a SELECT, so PRAGMA, CALL, EXPLAIN and the PIVOT
// statement fail there (errUnparsed, as does a syntax error), and
// SHOW/DESCRIBE/SUMMARIZE/UNPIVOT statements come back as a SELECT node
// whose select list is a star the parser made up (no position in the text)
// over a SHOW or PIVOT reference. The same constructs inside a SELECT the
// user wrote (`SELECT * FROM (DESCRIBE steps)`, `FROM steps UNPIVOT …`) are
// that user's SELECT and pass; so do DuckDB's SELECT shorthands
// `FROM steps`, `TABLE steps` and `VALUES …`.
func writtenAsSelect(conn driver.Conn, query string) error {
	ps, err := conn.Prepare("SELECT json_serialize_sql($1::VARCHAR)::VARCHAR")
	if err != nil {
		return fmt.Errorf("duck: prepare the parser check: %w", err)
	}
	defer ps.Close()
	rows, err := ps.(driver.StmtQueryContext).QueryContext(context.Background(), []driver.NamedValue{{Ordinal: 1, Value: query}})
	if err != nil {
		return fmt.Errorf("duck: parser check: %w", err)
	}
	defer rows.Close()
	vals := make([]driver.Value, 1)
	if err := rows.Next(vals); err != nil {
		return fmt.Errorf("duck: parser check: %w", err)
	}
	text, _ := vals[0].(string)
	var parsed struct {
		Error      bool `json:"error"`
		Statements []struct {
			Node struct {
				Type       string `json:"type"`
				SelectList []struct {
					Class    string `json:"class"`
					Location uint64 `json:"query_location"`
				} `json:"select_list"`
				FromTable struct {
					Type string `json:"type"`
				} `json:"from_table"`
			} `json:"node"`
		} `json:"statements"`
	}
	if err := json.Unmarshal([]byte(text), &parsed); err != nil {
		return fmt.Errorf("duck: parser check: %w", err)
	}
	if parsed.Error {
		return errUnparsed
	}
	if len(parsed.Statements) != 1 {
		return errNotSelect
	}
	n := parsed.Statements[0].Node
	if n.Type == "SELECT_NODE" && (n.FromTable.Type == "SHOW_REF" || n.FromTable.Type == "PIVOT") &&
		len(n.SelectList) == 1 && n.SelectList[0].Class == "STAR" && n.SelectList[0].Location == math.MaxUint64 {
		return errRewritten
	}
	return nil
}

// rowTooLarge is the marker of the row check's error, for queryError.
const rowTooLarge = "critic: result row too large"

// boundedQuery wraps query in the row check and an outer LIMIT. The
// newlines keep a trailing `-- comment` from swallowing the wrapper; the
// result is validated like the user's own SQL, so a wrapper that changes
// meaning is refused, not run. The row's size is its JSON (to_json of the
// whole row), measured by DuckDB.
func boundedQuery(query string, limit, maxRowBytes int) string {
	q := strings.TrimRight(query, " \t\r\n;")
	return "SELECT * FROM (\n" + q + "\n) AS _critic_row WHERE CASE WHEN strlen(CAST(to_json(_critic_row) AS VARCHAR)) > " +
		strconv.Itoa(maxRowBytes) + " THEN error('" + rowTooLarge + "') ELSE true END LIMIT " + strconv.Itoa(limit)
}

// renamedDuplicates says whether a wrapped statement's columns look renamed
// by DuckDB, which makes duplicate names in a subquery unique (a, a →
// a, a_1): some column is another column's name plus _<digits>.
func renamedDuplicates(stmt *duckdb.Stmt) bool {
	n, err := stmt.ColumnCount()
	if err != nil {
		return true
	}
	names := make(map[string]bool, n)
	cols := make([]string, 0, n)
	for i := range n {
		c, err := stmt.ColumnName(i)
		if err != nil {
			return true
		}
		c = strings.ToLower(c)
		names[c] = true
		cols = append(cols, c)
	}
	for _, c := range cols {
		i := strings.LastIndexByte(c, '_')
		if i > 0 && i < len(c)-1 && strings.Trim(c[i+1:], "0123456789") == "" && names[c[:i]] {
			return true
		}
	}
	return false
}

func sameColumns(a, b *duckdb.Stmt) bool {
	na, errA := a.ColumnCount()
	nb, errB := b.ColumnCount()
	if errA != nil || errB != nil || na != nb {
		return false
	}
	for i := range na {
		x, errX := a.ColumnName(i)
		y, errY := b.ColumnName(i)
		if errX != nil || errY != nil || x != y {
			return false
		}
	}
	return true
}

// readRows converts at most maxRows rows, and stops before the row that
// would take the result's JSON past maxBytes; either sets Truncated.
func readRows(rows driver.Rows, maxRows, maxBytes int) (*Result, error) {
	cols := rows.Columns()
	types := make([]string, len(cols))
	if tn, ok := rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		for i := range cols {
			types[i] = tn.ColumnTypeDatabaseTypeName(i)
		}
	}
	res := &Result{Columns: append([]string{}, cols...), Rows: [][]any{}}
	size := 0
	for _, c := range cols {
		size += jsonSize(c) + 1
	}
	dest := make([]driver.Value, len(cols))
	for {
		err := rows.Next(dest)
		if errors.Is(err, io.EOF) {
			return res, nil
		}
		if err != nil {
			return nil, err
		}
		if len(res.Rows) == maxRows {
			res.Truncated = true
			return res, nil
		}
		row := make([]any, len(cols))
		n := 2
		for i, v := range dest {
			row[i] = jsonValue(v, types[i])
			n += jsonSize(row[i]) + 1
		}
		if size+n > maxBytes {
			res.Truncated = true
			return res, nil
		}
		size += n
		res.Rows = append(res.Rows, row)
	}
}

// jsonSize is how many bytes v (a jsonValue result) takes as JSON, close
// enough for a cap: exact for strings and structure, 24 for any number.
func jsonSize(v any) int {
	switch x := v.(type) {
	case nil:
		return 4
	case bool:
		return 5
	case string:
		n := len(x) + 2
		for i := 0; i < len(x); i++ {
			switch c := x[i]; {
			case c < 0x20:
				n += 5
			case c == '"' || c == '\\':
				n++
			}
		}
		return n
	case json.Number:
		return len(x)
	case []any:
		n := 2
		for _, e := range x {
			n += jsonSize(e) + 1
		}
		return n
	case map[string]any:
		n := 2
		for k, e := range x {
			n += jsonSize(k) + 2 + jsonSize(e)
		}
		return n
	}
	return 24
}

// jsonValue converts a driver value to the JSON shape documented on Result.
// dbType is DuckDB's type name for top-level columns ("" inside nested
// values, where []byte is always base64 and times are RFC 3339).
func jsonValue(v any, dbType string) any {
	switch x := v.(type) {
	case nil, bool, string, int8, int16, int32, int64, uint8, uint16, uint32, uint64, int, uint:
		return x
	case float32:
		return jsonFloat(float64(x))
	case float64:
		return jsonFloat(x)
	case *big.Int:
		if x == nil {
			return nil
		}
		return json.Number(x.String())
	case duckdb.Decimal:
		if x.Value == nil {
			return nil
		}
		return json.Number(x.String())
	case []byte:
		if dbType == "UUID" && len(x) == 16 {
			h := hex.EncodeToString(x)
			return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
		}
		return base64.StdEncoding.EncodeToString(x)
	case time.Time:
		switch {
		case dbType == "DATE":
			return x.Format("2006-01-02")
		case strings.HasPrefix(dbType, "TIME") && !strings.HasPrefix(dbType, "TIMESTAMP"):
			if dbType == "TIME WITH TIME ZONE" {
				return x.Format("15:04:05.999999Z07:00")
			}
			return x.Format("15:04:05.999999")
		}
		return x.UTC().Format(time.RFC3339Nano)
	case duckdb.Interval:
		return map[string]any{"months": x.Months, "days": x.Days, "micros": x.Micros}
	case duckdb.Union:
		return jsonValue(x.Value, "")
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e, "")
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e, "")
		}
		return out
	case duckdb.Map:
		out := make([]any, 0, len(x))
		for k, e := range x {
			out = append(out, map[string]any{"key": jsonValue(k, ""), "value": jsonValue(e, "")})
		}
		return out
	case duckdb.OrderedMap:
		keys, vals := x.Keys(), x.Values()
		out := make([]any, 0, len(keys))
		for i := range keys {
			out = append(out, map[string]any{"key": jsonValue(keys[i], ""), "value": jsonValue(vals[i], "")})
		}
		return out
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

func jsonFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

// queryError turns what went wrong into what the user sees. A deadline is the
// time limit (the driver interrupts DuckDB when ctx expires); the caller going
// away is its own context error; a DuckDB error raised by the user's SQL is a
// ValidationError carrying DuckDB's text. Errors of loading and locking down
// (query == "") are internal: they may name server paths.
func (s *Snapshots) queryError(ctx context.Context, err error, query string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &domain.ValidationError{Code: "query_timeout",
			Message: fmt.Sprintf("query exceeded the time limit of %s", s.opts.Timeout)}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if v, ok := errors.AsType[*domain.ValidationError](err); ok {
		return v
	}
	if query == "" {
		return err
	}
	if de, ok := errors.AsType[*duckdb.Error](err); ok {
		msg := de.Msg
		switch {
		case strings.Contains(msg, rowTooLarge):
			return &domain.ValidationError{Code: "query_row_too_large",
				Message: fmt.Sprintf("a row of the result is larger than the limit of %d bytes as JSON; select fewer or shorter columns (substr, len)", s.opts.MaxRowBytes)}
		case de.Type == duckdb.ErrorTypeOutOfMemory:
			return &domain.ValidationError{Code: "query_out_of_memory",
				Message: fmt.Sprintf("the query needs more memory than its limit of %s: aggregate or filter more, or select fewer rows", s.opts.MemoryLimit)}
		case de.Type == duckdb.ErrorTypePermission || strings.Contains(msg, "disabled by configuration"):
			msg = "external access is disabled: " + msg
		}
		return &domain.ValidationError{Code: "invalid_query", Message: msg}
	}
	return err
}

// checkStatement applies the limits that hold before DuckDB sees the text:
// its length, and the number of set operations (UNION, INTERSECT, EXCEPT,
// counted as words outside strings, quoted names and comments, so DuckDB's
// `SELECT * EXCEPT (col)` counts too: the count errs high). DuckDB plans
// outside its memory limit, and a 380 KB 20,000-way UNION ALL took 7 GB to
// plan. A text with no statement at all (only comments, semicolons, white
// space or a byte order mark) is refused here too.
func checkStatement(query string, maxBytes, maxSetOps int) error {
	if len(query) > maxBytes {
		return &domain.ValidationError{Code: "query_too_long", Field: "sql",
			Message: fmt.Sprintf("the statement is %d bytes; the limit is %d bytes", len(query), maxBytes)}
	}
	words, setOps := 0, 0
	for i := 0; i < len(query); {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(query[i+1:], c)
			if j < 0 {
				i = len(query)
			} else {
				i += j + 2
			}
			words++
		case strings.HasPrefix(query[i:], "--"):
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				j = len(query) - i
			}
			i += j
		case strings.HasPrefix(query[i:], "/*"):
			j := strings.Index(query[i+2:], "*/")
			if j < 0 {
				i = len(query)
			} else {
				i += j + 4
			}
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80:
			j := i
			for j < len(query) && (query[j] == '_' || query[j] >= 'a' && query[j] <= 'z' || query[j] >= 'A' && query[j] <= 'Z' ||
				query[j] >= '0' && query[j] <= '9' || query[j] >= 0x80) {
				j++
			}
			w := query[i:j]
			if w != "\uFEFF" {
				words++
			}
			if strings.EqualFold(w, "union") || strings.EqualFold(w, "intersect") || strings.EqualFold(w, "except") {
				setOps++
			}
			i = j
		case c == ';' || c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v':
			i++
		default:
			words++
			i++
		}
	}
	if words == 0 {
		return &domain.ValidationError{Code: "invalid_query", Field: "sql", Message: "empty query: the statement has no SQL, only comments, semicolons or white space"}
	}
	if setOps > maxSetOps {
		return &domain.ValidationError{Code: "query_too_complex", Field: "sql",
			Message: fmt.Sprintf("the statement has %d set operations (UNION, INTERSECT, EXCEPT); the limit is %d", setOps, maxSetOps)}
	}
	return nil
}
