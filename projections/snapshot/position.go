package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// PositionFile is the file in the snapshot directory that records the log
// position the snapshot reflects.
const PositionFile = "position.json"

// FirstAfter returns the smallest event sequence number in the log after
// after, 0 when none (eventstore.Store.FirstAfter).
type FirstAfter func(ctx context.Context, after int64) (int64, error)

// Position is the event-log position this instance's snapshot provably
// reflects: every event with seq ≤ Applied has been dealt with by the
// projection (applied, skipped as irrelevant, or held behind a parked event
// of its owner, which the query path reports separately).
//
// The bus delivers partitions independently, so events arrive out of global
// order; a seq seen before all smaller ones waits in a pending set. Applied
// moves over seqs that were seen, and over gaps the log proves permanent
// (appends are serialized, so a seq missing below a visible one never
// appears: a rolled-back append). Both are kept in PositionFile, written
// after the batch's DuckDB commit and before the batch is acknowledged on the
// bus, so a restart — kill -9 included — resumes with a position no greater
// than what the files hold, and the pending set covers events whose bus
// offsets were committed while a smaller seq was still missing.
type Position struct {
	path  string
	first FirstAfter

	mu      sync.Mutex
	applied int64
	pending map[int64]struct{}
	changed chan struct{}
	// hurry closes when a query waits for an event not applied yet (see
	// Hurry); a new one opens when the position moves.
	hurry   chan struct{}
	hurried bool
	known   bool      // the position file existed (or was written) in this directory
	moved   time.Time // when applied last moved (or the position was opened)
}

type positionFile struct {
	Applied int64   `json:"applied"`
	Pending []int64 `json:"pending,omitempty"`
}

// OpenPosition reads dir's position file. Without one the position is 0
// and Known is false: the directory may hold files whose events the bus will
// not deliver again (an older version, a consumer group that moved on), so
// the caller must catch up from the log (see CatchUp) before trusting it.
func OpenPosition(dir string, first FirstAfter) (*Position, error) {
	p := &Position{path: filepath.Join(dir, PositionFile), first: first, pending: map[int64]struct{}{},
		changed: make(chan struct{}), hurry: make(chan struct{}), moved: time.Now()}
	raw, err := os.ReadFile(p.path)
	if errors.Is(err, os.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot: read %s: %w", p.path, err)
	}
	var f positionFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("snapshot: %s is corrupt (delete it to rebuild the position from the log): %w", p.path, err)
	}
	p.applied, p.known = f.Applied, true
	for _, s := range f.Pending {
		if s > p.applied {
			p.pending[s] = struct{}{}
		}
	}
	return p, nil
}

// Applied is the position: every event with seq ≤ Applied is in the snapshot.
func (p *Position) Applied() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied
}

// Known reports whether the position was recorded in this directory (false
// for a directory without position file until the first Processed).
func (p *Position) Known() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.known
}

// Processed records seqs as dealt with (the guard's OnProcessed), advances
// the position as far as the log allows and persists it.
func (p *Position) Processed(ctx context.Context, seqs []int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	before := p.applied
	added := false
	for _, s := range seqs {
		if _, dup := p.pending[s]; s > p.applied && !dup {
			p.pending[s] = struct{}{}
			added = true
		}
	}
	if !added && p.known {
		return nil
	}
	if err := p.advanceLocked(ctx); err != nil {
		return err
	}
	if err := p.saveLocked(); err != nil {
		return err
	}
	if p.applied != before {
		close(p.changed)
		p.changed = make(chan struct{})
		p.moved = time.Now()
		if p.hurried {
			p.hurry, p.hurried = make(chan struct{}), false
		}
	}
	return nil
}

// Stuck reports a position that has later events pending but has not moved
// for at least d: the event after Applied never arrived, so every query
// needing it answers snapshot_catching_up. It names how many seqs wait
// behind it. Operators see it in the log (apiserver) and in /readyz.
func (p *Position) Stuck(d time.Duration) (applied int64, pending int, stuck bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied, len(p.pending), len(p.pending) > 0 && time.Since(p.moved) >= d
}

// advanceLocked moves applied over pending seqs and permanent gaps.
func (p *Position) advanceLocked(ctx context.Context) error {
	for len(p.pending) > 0 {
		if _, ok := p.pending[p.applied+1]; ok {
			delete(p.pending, p.applied+1)
			p.applied++
			continue
		}
		next, err := p.first(ctx, p.applied)
		if err != nil {
			return fmt.Errorf("snapshot: read the log to advance the position: %w", err)
		}
		if _, ok := p.pending[next]; !ok || next == 0 {
			return nil // the next event of the log has not been dealt with yet
		}
		delete(p.pending, next)
		p.applied = next
	}
	return nil
}

// saveLocked writes the position file atomically (write, then rename).
func (p *Position) saveLocked() error {
	f := positionFile{Applied: p.applied, Pending: slices.Sorted(maps.Keys(p.pending))}
	raw, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tmp := p.path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("snapshot: write position: %w", err)
	}
	if err := os.Rename(tmp, p.path); err != nil {
		return fmt.Errorf("snapshot: write position: %w", err)
	}
	p.known = true
	return nil
}

// Hurry is a channel that closes once a query waits for an event the
// snapshot has not applied (bus.Config.Hurry): the projection then applies
// what it has gathered at once instead of gathering for the rest of its
// window (apiserver.SnapshotGather), which a query right after a write
// would otherwise wait out.
func (p *Position) Hurry() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hurry
}

// WaitFor blocks until the position reaches needed or ctx ends; then it
// answers a SnapshotCatchingUpError saying how far the snapshot has come.
// While it waits, Hurry's channel is closed.
func (p *Position) WaitFor(ctx context.Context, needed int64) error {
	for {
		p.mu.Lock()
		applied, ch := p.applied, p.changed
		if applied < needed && !p.hurried {
			close(p.hurry)
			p.hurried = true
		}
		p.mu.Unlock()
		if applied >= needed {
			return nil
		}
		select {
		case <-ctx.Done():
			return &domain.SnapshotCatchingUpError{Applied: applied, Needed: needed}
		case <-ch:
		}
	}
}

// WritePosition records applied as dir's position with nothing pending:
// `critic replay snapshot` rebuilt dir from every event up to applied.
func WritePosition(dir string, applied int64) error {
	p := &Position{path: filepath.Join(dir, PositionFile), pending: map[int64]struct{}{}, applied: applied}
	return p.saveLocked()
}

// LogReader is what CatchUp reads the log through (eventstore.Store).
type LogReader interface {
	ReadAfter(ctx context.Context, after int64, limit int) ([]events.Envelope, error)
}

// LogApplier applies events read from the log (projections.Guard.ApplyLog,
// which also reports them to the position).
type LogApplier func(ctx context.Context, envs []events.Envelope) error

// CatchUp applies the log from the position up to target straight from the
// event store, before the projection consumes the bus: a (re)started
// instance reaches the log as of its start without waiting for its consumer
// group to join, and a directory without position file (an older version,
// the snapshots deleted while the consumer group kept its offsets) is
// completed from the log instead of trusting what the bus will still
// deliver. Events already applied are skipped by the projection's dedupe.
func CatchUp(ctx context.Context, log LogReader, apply LogApplier, pos *Position, target int64) error {
	for after := pos.Applied(); after < target; {
		batch, err := log.ReadAfter(ctx, after, 2000)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		if err := apply(ctx, batch); err != nil {
			return err
		}
		after = batch[len(batch)-1].Seq
	}
	if !pos.Known() {
		// Nothing to apply (an empty log): record that position 0 is exact.
		return pos.Processed(ctx, nil)
	}
	return nil
}
