package duck

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
)

// Snapshots owns the per-owner DuckDB files under one directory
// (`<dir>/<owner_id>.duckdb`): the snapshot projection writes them through
// Apply/ApplyBatch, and Query reads them. One process must own the directory
// (DuckDB files are single-writer): New takes an exclusive lock on
// `<dir>.lock` and fails while another Snapshots, in this process or another
// (a running `critic serve` when `critic replay snapshot` starts), holds it.
// In `critic serve` and `critic run` the owner of the directory is the query
// process (handlers/queryhost), where the kernel bounds DuckDB's memory.
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
	owners := slices.Collect(maps.Values(s.owners))
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

func (s *Snapshots) owner(ownerID string) (*ownerState, error) {
	if !ownerIDPattern.MatchString(ownerID) {
		return nil, fmt.Errorf("duck: invalid owner id %q", ownerID)
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
