package duck

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// replica is one owner's user tables in a locked-down in-memory DuckDB
// (LoadReplica). Queries share it, each on its own fresh connection; it is
// closed when it is retired (stale, evicted, idle or Close) and the last
// query using it ended.
type replica struct {
	db *sql.DB
	// w is the replica's own connection, through which it follows the
	// owner's changes (delta.go); used only while the owner's rw lock is
	// held exclusively.
	w *sql.Conn
	// version is the owner's snapshot version the replica holds (guarded by
	// Snapshots.mu: advance moves it).
	version uint64
	bytes   int64 // DuckDB's memory use after loading

	// guarded by Snapshots.mu
	refs    int
	retired bool
	lastUse time.Time
}

// buildCall is a replica build in progress; queries that need a replica
// while one is being built wait for it instead of copying again.
type buildCall struct {
	done    chan struct{}
	waiters int      // queries waiting; each gets a reference (guarded by Snapshots.mu)
	rep     *replica // set before done closes, nil on error
	err     error
}

// queryReplica is Query for LoadReplica.
func (s *Snapshots) queryReplica(ctx context.Context, ownerID string, o *ownerState, query string) (*Result, error) {
	r, err := s.acquireReplica(ctx, o, ownerID)
	if err != nil {
		return nil, s.queryError(ctx, err, "")
	}
	defer s.releaseReplica(r)
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return nil, s.queryError(ctx, err, "")
	}
	defer conn.Close()
	res, err := s.run(ctx, conn, query)
	if err != nil {
		return nil, s.queryError(ctx, err, query)
	}
	return res, nil
}

// acquireReplica returns a replica holding at least every change committed
// before the call (the caller must release it), building one if needed. A
// build outlives a caller that gives up, so the next query finds it done.
func (s *Snapshots) acquireReplica(ctx context.Context, o *ownerState, ownerID string) (*replica, error) {
	want := o.version.Load()
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errors.New("duck: snapshots closed")
		}
		if r := o.rep; r != nil && r.version >= want {
			r.refs++
			r.lastUse = time.Now()
			s.mu.Unlock()
			return r, nil
		}
		call := o.building
		if call == nil {
			call = &buildCall{done: make(chan struct{})}
			o.building = call
			s.bg.Add(1)
			go s.buildReplica(ownerID, o, call)
		}
		call.waiters++
		s.mu.Unlock()

		select {
		case <-call.done:
		case <-ctx.Done():
			s.mu.Lock()
			select {
			case <-call.done: // finished meanwhile: we hold a reference
				if call.rep != nil {
					s.releaseLocked(call.rep)
				}
			default:
				call.waiters--
			}
			s.mu.Unlock()
			return nil, ctx.Err()
		}
		if call.err != nil {
			return nil, call.err
		}
		s.mu.Lock()
		fresh := call.rep.version >= want
		s.mu.Unlock()
		if fresh {
			return call.rep, nil
		}
		// That build started before a change we must see: build again.
		s.releaseReplica(call.rep)
	}
}

func (s *Snapshots) releaseReplica(r *replica) {
	s.mu.Lock()
	s.releaseLocked(r)
	s.mu.Unlock()
}

func (s *Snapshots) releaseLocked(r *replica) {
	r.refs--
	if r.refs == 0 && r.retired {
		go r.close()
	}
}

// retireLocked drops o's current replica; it closes once unused.
func (s *Snapshots) retireLocked(o *ownerState) {
	r := o.rep
	if r == nil {
		return
	}
	o.rep = nil
	r.retired = true
	s.replicaBytes -= r.bytes
	if r.refs == 0 {
		go r.close()
	}
}

func (r *replica) close() {
	_ = r.w.Close()
	_ = r.db.Close()
}

// buildReplica copies ownerID's snapshot into a new replica and installs it,
// evicting the least recently used replicas beyond ReplicaBytes.
func (s *Snapshots) buildReplica(ownerID string, o *ownerState, call *buildCall) {
	defer s.bg.Done()
	ctx, cancel := s.buildContext()
	defer cancel()
	r, err := s.newReplica(ctx, ownerID, o, false)

	s.mu.Lock()
	defer s.mu.Unlock()
	o.building = nil
	call.err = err
	if err == nil {
		call.rep = r
		r.refs = call.waiters
		r.lastUse = time.Now()
		switch {
		case s.closed || r.version != o.version.Load() || r.bytes > s.opts.ReplicaBytes:
			// Stale already, or too big to keep: serve the waiters only.
			r.retired = true
			if r.refs == 0 {
				go r.close()
			}
		default:
			s.retireLocked(o)
			o.rep = r
			s.replicaBytes += r.bytes
			s.evictReplicasLocked(o)
			if r.bytes >= compressMin && o.rep == r {
				r.refs++ // held by compress
				s.bg.Add(1)
				go s.compress(ownerID, o, r)
			}
		}
	}
	close(call.done)
}

// buildContext bounds a replica build to ten query time limits; Close
// cancels a build in progress.
func (s *Snapshots) buildContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*s.opts.Timeout)
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// compressMin is the replica size from which compress runs; smaller ones
// scan fast enough as they are.
const compressMin = 8 << 20

// compress replaces a serving replica with a compressed copy of the same
// version. An in-memory DuckDB keeps tables uncompressed until a
// checkpoint; measured on a million steps, 269 MB → 44 MB and the group-by
// about 1.4× faster, level with a warm file. The checkpoint takes seconds on
// that size, so the first query after a change is served uncompressed and
// this builds the compressed copy on the side. Checkpointing the serving
// replica itself was tried: a CHECKPOINT waits for a moment without running
// queries, which an owner querying back to back may never leave it.
func (s *Snapshots) compress(ownerID string, o *ownerState, r *replica) {
	defer s.bg.Done()
	defer s.releaseReplica(r)
	ctx, cancel := s.buildContext()
	defer cancel()
	s.mu.Lock()
	o.compressing, o.followed = true, nil
	s.mu.Unlock()
	done := func() {
		o.compressing, o.followed = false, nil
	}
	c, err := s.newReplica(ctx, ownerID, o, true)
	if err != nil {
		s.mu.Lock()
		done()
		s.mu.Unlock()
		return // r keeps serving: slower, still correct
	}
	// Changes r followed while the copy was built are applied to it too,
	// with writers held off (o.rw), so it is as current as r when it
	// replaces r.
	o.rw.Lock()
	defer o.rw.Unlock()
	s.mu.Lock()
	var pending []*delta
	ok := !s.closed && o.rep == r && len(o.followed) < maxFollowed
	for _, d := range o.followed {
		if d.version > c.version {
			pending = append(pending, d)
		}
	}
	s.mu.Unlock()
	for _, d := range pending {
		if !ok {
			break
		}
		if err := c.apply(ctx, d); err != nil {
			ok = false
		}
		c.version = d.version
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	done()
	if !ok || s.closed || o.rep != r || c.version != r.version {
		go c.close() // r was replaced or went stale meanwhile
		return
	}
	c.lastUse = r.lastUse
	s.retireLocked(o)
	o.rep = c
	s.replicaBytes += c.bytes
}

// replicaMemory is what a replica's DuckDB holds, for ReplicaBytes.
const replicaMemory = "SELECT coalesce(sum(memory_usage_bytes), 0)::BIGINT FROM duckdb_memory()"

// newReplica loads a sandbox with all of the owner's user tables (compressed
// by a checkpoint if asked) and locks it down; from then on it serves any
// number of fresh connections.
func (s *Snapshots) newReplica(ctx context.Context, ownerID string, o *ownerState, compress bool) (*replica, error) {
	sb, err := s.takeSandbox(ctx)
	if err != nil {
		return nil, err
	}
	s.builds.Add(1)
	o.rw.RLock()
	version := o.version.Load()
	err = s.load(ctx, sb, ownerID, "", true)
	o.rw.RUnlock()
	if err != nil {
		sb.close()
		return nil, err
	}
	if compress {
		if _, err := sb.conn.ExecContext(ctx, "CHECKPOINT"); err != nil {
			sb.close()
			return nil, fmt.Errorf("duck: compress replica: %w", err)
		}
	}
	var bytes int64
	if err := sb.conn.QueryRowContext(ctx, replicaMemory).Scan(&bytes); err != nil {
		sb.close()
		return nil, fmt.Errorf("duck: measure replica: %w", err)
	}
	if err := s.lockDown(ctx, sb, true); err != nil {
		sb.close()
		return nil, err
	}
	// Every query gets a new DuckDB connection: none is kept idle for reuse.
	// The loading connection stays the replica's own, for following changes.
	sb.db.SetMaxIdleConns(0)
	sb.db.SetMaxOpenConns(s.opts.MaxQueriesPerOwner + 1)
	return &replica{db: sb.db, w: sb.conn, version: version, bytes: bytes}, nil
}

// evictReplicasLocked retires least recently used replicas (other than
// keep's) until the installed ones fit ReplicaBytes.
func (s *Snapshots) evictReplicasLocked(keep *ownerState) {
	for s.replicaBytes > s.opts.ReplicaBytes {
		var victim *ownerState
		for _, o := range s.owners {
			if o == keep || o.rep == nil {
				continue
			}
			if victim == nil || o.rep.lastUse.Before(victim.rep.lastUse) {
				victim = o
			}
		}
		if victim == nil {
			return
		}
		s.retireLocked(victim)
	}
}

// dropIdleReplicas retires replicas unused for ReplicaIdle until Close.
func (s *Snapshots) dropIdleReplicas() {
	defer s.bg.Done()
	every := min(s.opts.ReplicaIdle/2, 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.mu.Lock()
			for _, o := range s.owners {
				if r := o.rep; r != nil && r.refs == 0 && now.Sub(r.lastUse) > s.opts.ReplicaIdle {
					s.retireLocked(o)
				}
			}
			s.mu.Unlock()
		}
	}
}
