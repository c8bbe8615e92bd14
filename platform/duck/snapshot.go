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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// Options tunes a Snapshots. The zero value gives the production settings of
// DESIGN §10; tests shorten Timeout.
type Options struct {
	// OnQuery, when set, is told how long each Query took and how it ended
	// (the query-latency metric).
	OnQuery func(elapsed time.Duration, err error) `json:"-"`
	// OnOverrun, when set, is called when a query's work goes on 5 s past
	// its deadline: DuckDB checks no interrupt while it folds constants at
	// plan time, so only ending the process stops it (the query process
	// does; in the API process nothing is set and the work runs out).
	OnOverrun func() `json:"-"`
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
	// Load chooses how a query gets the owner's rows (default LoadReplica).
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
	// ReplicaBytes bounds the memory LoadReplica keeps in per-owner replicas
	// (default 4 GiB); the least recently used replicas are dropped beyond it.
	// One replica larger than the budget is still built for its query and
	// dropped when that query ends.
	ReplicaBytes int64
	// ReplicaIdle drops a replica nobody queried for this long (default 10
	// minutes), so a burst of queries does not pin memory for good.
	ReplicaIdle time.Duration
	// MaxQueriesPerOwner bounds concurrent queries of one owner (default
	// 2, half of MaxConcurrent); more wait for a turn within their time
	// limit.
	MaxQueriesPerOwner int
	// MaxConcurrent bounds the queries running in this process, all owners
	// together (default 4). A query that finds no free slot within
	// QueueWait is refused as unavailable (503) naming the limit, so a few
	// accounts cannot stack up memory and threads for everyone.
	MaxConcurrent int
	// QueueWait is how long a query waits for a free slot (default 1 s).
	QueueWait time.Duration
	// QueryMemory, when set, is the DuckDB memory budget in bytes of all
	// queries together: each sandbox's memory_limit becomes QueryMemory /
	// MaxConcurrent, overriding MemoryLimit (whose 2 GB default is the
	// share of an 8 GB budget over the default 4 slots).
	QueryMemory int64
	// MaxStatementBytes caps the length of the SQL text (default 64 KiB):
	// DuckDB plans outside its memory limit, and planning grows with text.
	MaxStatementBytes int
	// MaxSetOperations caps UNION/INTERSECT/EXCEPT in one statement
	// (default 64), counted in the text before DuckDB sees it: a 20,000-way
	// UNION ALL took gigabytes to plan.
	MaxSetOperations int
	// MaxResultBytes caps the JSON size of a result (default 16 MiB): rows
	// stop being read once it is passed, and the result says truncated.
	MaxResultBytes int
	// MaxRowBytes caps one row's JSON size (default 4 MiB), checked inside
	// DuckDB before the row reaches Go; a larger row fails the query (422).
	MaxRowBytes int
}

// DefaultReplicaBytes is Options.ReplicaBytes when unset.
const DefaultReplicaBytes = 4 << 30

// LoadMode says how a query gets the owner's rows. See Snapshots for the
// measurements behind the default.
type LoadMode int

const (
	// LoadReplica keeps, per owner, an in-memory DuckDB built like LoadCopy
	// (the user tables copied from the owner file, the file detached,
	// external access and the local file system disabled, configuration
	// locked) and runs each query on a fresh connection to it. The replica is
	// rebuilt on the first query after the snapshot changed, so repeated
	// queries pay no copy. Only the caller's rows are in it and nothing of the
	// file (path, `_applied`) is reachable. The default.
	LoadReplica LoadMode = iota
	// LoadCopy attaches the owner file read-only, copies the user tables into
	// a fresh sandbox's memory and detaches before the user's SQL runs, for
	// every query. Only the user tables exist afterwards: no file path,
	// no `_applied`. The strictest isolation (a new DuckDB instance per
	// query) and the slowest on large snapshots.
	LoadCopy
	// LoadAttach keeps the owner file attached read-only for the query and
	// exposes the user tables as views. It avoids the copy but the user can
	// see the file path (duckdb_databases(), the allowed_paths setting) and
	// the `_applied` event ids of their own snapshot. Kept for comparison.
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
	if o.ReplicaBytes <= 0 {
		o.ReplicaBytes = DefaultReplicaBytes
	}
	if o.ReplicaIdle <= 0 {
		o.ReplicaIdle = 10 * time.Minute
	}
	if o.MaxQueriesPerOwner <= 0 {
		o.MaxQueriesPerOwner = 2
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 4
	}
	if o.QueryMemory > 0 {
		o.MemoryLimit = fmt.Sprintf("%dMiB", max(o.QueryMemory/int64(o.MaxConcurrent)>>20, 1))
	}
	if o.QueueWait <= 0 {
		o.QueueWait = time.Second
	}
	if o.MaxStatementBytes <= 0 {
		o.MaxStatementBytes = 64 << 10
	}
	if o.MaxSetOperations <= 0 {
		o.MaxSetOperations = 64
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = 16 << 20
	}
	if o.MaxRowBytes <= 0 {
		o.MaxRowBytes = 4 << 20
	}
	return o
}

// Snapshots owns the per-owner DuckDB files under one directory
// (`<dir>/<owner_id>.duckdb`): the snapshot projection writes them through
// Apply/ApplyBatch, and Query reads them. One process must own the directory
// (DuckDB files are single-writer): New takes an exclusive lock on
// `<dir>.lock` and fails while another Snapshots, in this process or another
// (a running `critic serve` when `critic replay snapshot` starts), holds it.
//
// # Design decision: dedupe, attach or copy (measured)
//
// Measured with BenchmarkQueryGroupBy (1,000,000 steps of one owner,
// `SELECT role, count(*), avg(length(content)) FROM steps GROUP BY role`,
// against an already-open warm DuckDB attached to the same file; 2 shared
// cores, 30 runs each, all in one run):
//
//	LoadCopy     p50 221 ms  vs direct 18.7 ms  11.8×  (copy per query)
//	LoadAttach   p50  40 ms  vs direct 18.5 ms   2.2×  (cold attach per query)
//	LoadReplica  p50  20 ms  vs direct 18.3 ms   1.1×  (warm replica, fresh connection)
//	             first query after a change: 270 ms (the copy)
//
// End to end (`make bench-query`: the same data imported through the API,
// 200 runs through POST /query with HTTP, auth and JSON, against a copy of
// the owner's file): p50 21.3 ms vs direct 19.5 ms, 1.09× (p99 40 vs 36 ms);
// an earlier run on a busier machine 31.4 vs 29.3 ms, 1.07×.
//
// A replica must be compressed to keep up: an in-memory DuckDB stores
// tables uncompressed until a checkpoint, and scanned the million steps 1.4×
// slower than the file (269 MB in memory; 44 MB after CHECKPOINT). The
// checkpoint costs seconds on that size, so a compressed copy is built in
// the background after the replica started serving (see compress).
//
// LoadReplica is the default: it is the only mode within the 2× target, and
// it exposes strictly less than LoadAttach (nothing of the file). What it
// gives up against a brand-new DuckDB per query is that consecutive queries
// of the same owner share one in-memory instance (each on a fresh
// connection). That instance holds only that owner's rows, is locked down
// before any user SQL runs (external access and the local file system off,
// configuration locked), and user SQL is one read-only SELECT, which cannot
// change its catalog or settings (the one side effect a SELECT can have is
// `checkpoint()`/`force_checkpoint()` on the replica's own memory, which at
// worst aborts the same owner's concurrent queries); so a query can observe
// at most earlier queries of the same owner (buffer pool warmth), never
// another owner. Per-query limits still hold: the time limit interrupts the query's
// own connection, the row cap is per query.
//
// Cloning a per-owner template into a fresh in-memory database per query
// (`COPY FROM DATABASE`) was rejected without coding it: it copies every row
// per query like LoadCopy, minus only the decompression.
//
// Dedupe stays by event id in the hidden table `_applied` of the owner file,
// written in the same DuckDB transaction as the rows (one file, so atomic).
// No query mode exposes it: LoadReplica and LoadCopy copy only the user
// tables. A per-owner high-water mark of the event `seq` was considered and
// rejected: it is only correct if one owner's events reach the projection in
// seq order, and the relay's retry of a partially written Kafka batch can
// put a later batch of the same partition before an earlier one (kafka-go
// writes a partition's batches one after another and moves on after one
// fails); a high-water mark would then silently skip the earlier events,
// while ids still apply them. The price is one indexed id per event.
type Snapshots struct {
	dir  string
	opts Options
	lock *os.File // flock on <dir>.lock while open

	mu           sync.Mutex
	owners       map[string]*ownerState
	closed       bool
	pool         chan *sandbox
	stop         chan struct{}
	bg           sync.WaitGroup
	useTick      uint64
	replicaBytes int64 // memory held by installed replicas (guarded by mu)
	// builds counts replicas built from an owner file (ReplicaBuilds).
	builds atomic.Int64
	// slots holds one token per running query (Options.MaxConcurrent).
	slots chan struct{}
}

// ReplicaBuilds is how many replicas were copied from an owner file so far
// (compressed copies included): a change followed incrementally builds
// none, so tests and operators can tell "followed" from "rebuilt".
func (s *Snapshots) ReplicaBuilds() int64 { return s.builds.Load() }

// ownerState serializes access to one owner file. Writers hold rw
// exclusively; a query or a replica build holds it shared while it reads the
// file, so a reader never sees a half-written file and the writer's DuckDB
// never checkpoints under a reader.
type ownerState struct {
	rw   sync.RWMutex
	db   *sql.DB   // the writer's DuckDB instance; nil while closed (guarded by rw)
	conn *sql.Conn // its single connection (guarded by rw)

	// version counts committed changes of the owner's snapshot in this
	// process; a replica built at an older version is stale.
	version atomic.Uint64

	// guarded by Snapshots.mu
	lastUse  uint64 // for choosing which writer to close
	open     bool
	rep      *replica   // the current replica (LoadReplica)
	building *buildCall // the replica build in progress
	// compressing is set while a compressed copy of rep is being built;
	// the deltas rep follows meanwhile are kept in followed, so the copy
	// can catch up before it replaces rep (compress).
	compressing bool
	followed    []*delta

	// turns holds one token per query of this owner running or loading
	// (Options.MaxQueriesPerOwner), taken before a process-wide slot so
	// one account's queued queries never hold slots others could use.
	turns chan struct{}
}

// ownerIDPattern keeps owner ids safe as file names: the id becomes a path.
var ownerIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// ErrLocked is returned by New when another Snapshots owns the directory.
var ErrLocked = errors.New("duck: the snapshot directory is in use by another process (is `critic serve` running?)")

// New opens (creating if needed) the snapshot directory and locks it.
func New(dir string, opts Options) (*Snapshots, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("duck: create snapshot dir: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("duck: snapshot dir: %w", err)
	}
	lock, err := lockDir(abs)
	if err != nil {
		return nil, err
	}
	s := &Snapshots{
		dir:    abs,
		opts:   opts.withDefaults(),
		lock:   lock,
		owners: map[string]*ownerState{},
		stop:   make(chan struct{}),
	}
	s.slots = make(chan struct{}, s.opts.MaxConcurrent)
	if s.opts.Prewarm > 0 {
		s.pool = make(chan *sandbox, s.opts.Prewarm)
		s.bg.Add(1)
		go s.fillPool()
	}
	if s.opts.Load == LoadReplica {
		s.bg.Add(1)
		go s.dropIdleReplicas()
	}
	return s, nil
}

// lockDir takes an exclusive, non-blocking flock on <dir>.lock. The lock
// dies with the process, so a crash never leaves the directory locked.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("duck: lock snapshot dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("duck: lock snapshot dir: %w", err)
	}
	return f, nil
}

// Close closes every open owner file (checkpointing it), the replicas and the
// blank sandboxes, and unlocks the directory. Queries and Applies after Close
// fail.
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
	for _, o := range owners {
		s.retireLocked(o)
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
	errs = append(errs, s.lock.Close()) // releases the flock
	return errors.Join(errs...)
}

// Dir is the snapshot directory (absolute): the projection keeps its log
// position there beside the owner files.
func (s *Snapshots) Dir() string { return s.dir }

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
		o = &ownerState{turns: make(chan struct{}, s.opts.MaxQueriesPerOwner)}
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
	if _, err := conn.ExecContext(ctx, tracesContributeDDL); err != nil {
		_ = conn.Close()
		_ = db.Close()
		return fmt.Errorf("duck: add traces.contribute: %w", err)
	}
	if _, err := conn.ExecContext(ctx, stepsUsageDDL); err != nil {
		_ = conn.Close()
		_ = db.Close()
		return fmt.Errorf("duck: add steps usage columns: %w", err)
	}
	if _, err := conn.ExecContext(ctx, annotationsCriteriaDDL); err != nil {
		_ = conn.Close()
		_ = db.Close()
		return fmt.Errorf("duck: add annotations criterion columns: %w", err)
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
	for _, id := range eventIDs {
		if id == "" {
			return 0, errors.New("duck: empty event id")
		}
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
	seen, err := appliedAmong(ctx, conn, eventIDs)
	if err != nil {
		return 0, err
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
	for lo := 0; lo < len(ids); lo += idChunk {
		chunk := ids[lo:min(lo+idChunk, len(ids))]
		q := "INSERT INTO main._applied VALUES " + strings.TrimSuffix(strings.Repeat("(?),", len(chunk)), ",")
		if _, err := conn.ExecContext(ctx, q, chunk...); err != nil {
			return 0, fmt.Errorf("duck: record events: %w", err)
		}
	}
	tx := &Tx{conn: conn}
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

// appliedAmong returns which of ids are already in `_applied`.
func appliedAmong(ctx context.Context, conn *sql.Conn, ids []string) (map[string]bool, error) {
	seen := make(map[string]bool, len(ids))
	for lo := 0; lo < len(ids); lo += idChunk {
		chunk := ids[lo:min(lo+idChunk, len(ids))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := conn.QueryContext(ctx, "SELECT event_id FROM main._applied WHERE event_id IN ("+
			strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",")+")", args...)
		if err != nil {
			return nil, fmt.Errorf("duck: look up applied events: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				_ = rows.Close()
				return nil, err
			}
			seen[id] = true
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

// changed records a committed change of o's snapshot: replicas built before
// it are stale, and the current one is dropped at once (after its running
// queries) rather than holding memory until the next query replaces it.
func (s *Snapshots) changed(o *ownerState) {
	o.version.Add(1)
	s.mu.Lock()
	s.retireLocked(o)
	s.mu.Unlock()
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
	s.changed(o)
	return errors.Join(errs...)
}

// Rebuild replaces the whole snapshot directory dir with one that fill
// writes from scratch, for `critic replay snapshot`: fill gets a Snapshots
// on an empty directory beside dir; only if it succeeds is that directory
// swapped in (two renames), so a failed or interrupted rebuild leaves the
// old snapshots in place. It holds dir's lock throughout, so it fails with
// ErrLocked while a server owns dir.
func Rebuild(ctx context.Context, dir string, opts Options, fill func(ctx context.Context, s *Snapshots) error) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("duck: snapshot dir: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return fmt.Errorf("duck: create snapshot dir: %w", err)
	}
	lock, err := lockDir(abs)
	if err != nil {
		return err
	}
	defer lock.Close()
	next, old := abs+".rebuild", abs+".old"
	for _, d := range []string{next, old} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("duck: clear %s: %w", filepath.Base(d), err)
		}
	}
	opts.Prewarm = -1
	s, err := New(next, opts)
	if err != nil {
		return err
	}
	err = fill(ctx, s)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	_ = os.Remove(next + ".lock")
	if err != nil {
		_ = os.RemoveAll(next)
		return err
	}
	if err := os.Rename(abs, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("duck: swap in the rebuilt snapshots: %w", err)
	}
	if err := os.Rename(next, abs); err != nil {
		return fmt.Errorf("duck: swap in the rebuilt snapshots (the old ones are in %s): %w", old, err)
	}
	return os.RemoveAll(old)
}

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
	if t.traces == nil {
		t.traces = map[string]bool{}
	}
	for _, id := range traceIDs {
		t.traces[id] = true
	}
}

// TouchAll records a change no Touch describes (the account's criteria):
// the replica is rebuilt on the next query.
func (t *Tx) TouchAll() { t.all = true }

// TouchAnnotation records that only these annotation rows changed.
func (t *Tx) TouchAnnotation(ids ...string) {
	if t.annotations == nil {
		t.annotations = map[string]bool{}
	}
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
	for _, table := range []string{"steps", "annotations", "scores", "action_scores", "step_labels", "task_scores", "evaluator_scores", "_step_labels", "_step_quality_checks"} {
		if err := t.Exec(ctx, "DELETE FROM main."+table+" WHERE trace_id = ?", traceID); err != nil {
			return err
		}
	}
	return t.Exec(ctx, "DELETE FROM main.traces WHERE id = ?", traceID)
}

// InsertTraces bulk-appends trace rows through DuckDB's appender. The ids
// must not exist yet (see ExistingTraces and DeleteTraces): a bulk import
// then costs one appender per batch instead of two statements per trace.
func (t *Tx) InsertTraces(ctx context.Context, rows []TraceRow) error {
	if len(rows) == 0 {
		return nil
	}
	return t.conn.Raw(func(dc any) error {
		a, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "main", "traces")
		if err != nil {
			return fmt.Errorf("duck: traces appender: %w", err)
		}
		for _, r := range rows {
			meta, err := jsonRaw(r.Metadata)
			if err != nil {
				_ = a.Close()
				return fmt.Errorf("duck: trace %s metadata: %w", r.ID, err)
			}
			if err := a.AppendRow(r.ID, nullString(r.ExternalID), nullString(r.Title), nullString(r.SourceFormat),
				nullString(r.SourceID), int32(r.StepCount), meta, nullTime(r.CreatedAt), nullTime(r.UpdatedAt), r.Contribute); err != nil {
				_ = a.Close()
				return fmt.Errorf("duck: append trace %s: %w", r.ID, err)
			}
		}
		return a.Close()
	})
}

// ExistingTraces returns which of ids have a row in `traces`.
func (t *Tx) ExistingTraces(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	for lo := 0; lo < len(ids); lo += idChunk {
		chunk := anySlice(ids[lo:min(lo+idChunk, len(ids))])
		rows, err := t.conn.QueryContext(ctx, "SELECT id FROM main.traces WHERE id IN ("+placeholders(len(chunk))+")", chunk...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				_ = rows.Close()
				return nil, err
			}
			out[id] = true
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DeleteTraces is DeleteTrace for many traces with one scan per table.
func (t *Tx) DeleteTraces(ctx context.Context, ids []string) error {
	for lo := 0; lo < len(ids); lo += idChunk {
		chunk := anySlice(ids[lo:min(lo+idChunk, len(ids))])
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
				nullString(st.ToolName), in, nullString(st.ToolCallID), meta,
				nullString(st.Model), nullInt32(st.InputTokens), nullInt32(st.OutputTokens), nullInt32(st.TotalTokens), nullInt32(st.CachedTokens)); err != nil {
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
	return t.Exec(ctx, `INSERT INTO main.annotations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.TraceID, derefString(r.StepID), derefInt(r.StepIndex), derefInt(r.Rating), derefString(r.Comment),
		quote, r.LabelError, derefString(r.LabelErrorNote), nullString(r.AuthorID), nullString(r.AuthorName),
		nullTime(r.CreatedAt), derefString(r.CriterionID), derefString(r.Value))
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

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullInt32(n *int32) any {
	if n == nil {
		return nil
	}
	return *n
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
