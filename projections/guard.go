package projections

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg"
)

// Guard keeps one bad event from freezing a projection for every account.
//
// Batches mix owners, and the bus redelivers a failing batch until it
// succeeds, so without a guard one event that cannot be applied (a corrupt
// claim-check blob, a payload the code cannot read, a bug) stops every
// owner's reads. The guard applies a batch whole; when that fails it applies
// the batch's events one at a time, retries a failing event with backoff a
// bounded number of times, and then parks it (a projection_parked row
// naming the projection, event, owner and error). The parked event's owner
// is then held: that owner's later events are skipped (they stay in the log)
// while every other owner's are applied. `critic projections retry EVENT_ID`
// asks the running projection to apply the parked event again and, when it
// succeeds, the held events from the log, in order; then the owner flows
// again. When the event can never apply, `critic projections skip EVENT_ID
// --reason …` appends projection.event_skipped: on reading it the guard
// passes over the event from then on (it is never handed to the applier,
// even when the bus redelivers it) and releases the owner the same way.
//
// Outages do not park anything (transient.go): a dropped connection, a
// database or broker that is restarting, a concurrent writer that won a
// version check fail the batch, and the bus redelivers it until they pass.
type Guard struct {
	name  string
	pool  *pgxpool.Pool
	store *eventstore.Store
	a     Applier
	log   *slog.Logger
	opts  GuardOptions

	obs     Observer // sees every batch (metrics, spans); nil: none
	obsName string
	// processed is told the seqs of every batch once it is applied (held
	// and skipped events included); nil: nobody.
	processed func(ctx context.Context, seqs []int64) error

	mu      sync.Mutex        // one batch or one operator retry at a time
	held    map[string]string // owner → its parked event
	skipped Skipped           // events an operator skipped, never applied
	loaded  bool              // held and skipped were read
	// heldView is a copy of held for Held, which must not wait for a batch
	// in progress (g.mu is held while a batch applies).
	heldView atomic.Pointer[map[string]string]
}

// publishHeld refreshes heldView from held (g.mu held).
func (g *Guard) publishHeld() {
	view := make(map[string]string, len(g.held))
	maps.Copy(view, g.held)
	g.heldView.Store(&view)
}

// GuardOptions bound the retries before an event is parked.
type GuardOptions struct {
	Tries   int           // attempts per event before parking it (default 4)
	Backoff time.Duration // wait before the second attempt, doubling after (default 250 ms)
	Poll    time.Duration // how often to look for operator retries (default 1 s)
	// Gather is how long a batch gathers events after its first one
	// (default 1 ms: only what is already in flight). A projection whose
	// readers do not wait on each event and whose transactions cost more
	// than their events (the DuckDB snapshot: a commit per batch) takes a
	// longer gather, so a stream of small appends lands in fewer commits;
	// a reader that does wait ends the gather early (bus.Config.Hurry).
	Gather time.Duration
}

// NewGuard wraps a projection named name (its consumer group) that applies
// with a. The pool holds projection_parked; the store is read to re-apply a
// parked event and the events held behind it.
func NewGuard(name string, pool *pgxpool.Pool, store *eventstore.Store, a Applier, log *slog.Logger, opts GuardOptions) *Guard {
	if opts.Tries < 1 {
		opts.Tries = 4
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 250 * time.Millisecond
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	return &Guard{name: name, pool: pool, store: store, a: a, log: log, opts: opts}
}

// Observe reports every batch the guard applies to o (nil: none) as the
// batches of the projection called name; it returns g for chaining.
func (g *Guard) Observe(name string, o Observer) *Guard {
	g.obs, g.obsName = o, name
	return g
}

// OnProcessed makes the guard report the sequence numbers of every batch it
// has dealt with — applied, skipped because their owner is held, or parked —
// to fn, after the applier returned and before the batch is acknowledged.
// The snapshot projection builds the log position it provably reflects from
// it (snapshot.Position). An error from fn fails the batch (redelivered).
func (g *Guard) OnProcessed(fn func(ctx context.Context, seqs []int64) error) *Guard {
	g.processed = fn
	return g
}

// Held reports whether owner's events are held behind a parked event, and
// which: reads of that owner from this projection would be incomplete.
func (g *Guard) Held(owner string) (eventID string, held bool) {
	view := g.heldView.Load()
	if view == nil {
		return "", false
	}
	eventID, held = (*view)[owner]
	return eventID, held
}

// ApplyLog applies events read from the log itself (in seq order) exactly
// as a bus batch: the held owners' events are skipped, a failing event is
// retried and parked, and OnProcessed hears of them. The snapshot projection
// uses it to catch up from the event store when it cannot know that the bus
// will deliver everything (its position file is missing).
func (g *Guard) ApplyLog(ctx context.Context, envs []events.Envelope) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.loaded {
		if err := g.loadHeld(ctx); err != nil {
			return err
		}
	}
	return g.applyBatch(ctx, time.Now(), envs)
}

// Run feeds the projection from the bus and serves operator retries until
// ctx ends.
func (g *Guard) Run(ctx context.Context, consume ConsumeFunc, topic string) error {
	g.mu.Lock()
	err := g.loadHeld(ctx)
	g.mu.Unlock()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.serveRetries(ctx)
	}()
	err = consume(ctx, topic, maxBatch, cmp.Or(g.opts.Gather, maxWait), g.Handle)
	cancel()
	<-done
	return err
}

// loadHeld reads which owners are held from projection_parked (g.mu held):
// parked events outlive the process.
func (g *Guard) loadHeld(ctx context.Context) error {
	held := map[string]string{}
	var owner, id string
	if err := pg.Each(ctx, g.pool, []any{&owner, &id}, func() error {
		held[owner] = id
		return nil
	}, `SELECT DISTINCT ON (owner_id) owner_id::text, event_id::text FROM projection_parked
		WHERE projection = $1 ORDER BY owner_id, seq`, g.name); err != nil {
		return fmt.Errorf("%s: load parked events: %w", g.name, err)
	}
	skipped, err := LoadSkipped(ctx, g.store)
	if err != nil {
		return fmt.Errorf("%s: %w", g.name, err)
	}
	g.held, g.skipped, g.loaded = held, skipped, true
	g.publishHeld()
	return nil
}

// Handle applies one bus batch (the ConsumeBatches handler). It fails only
// when ctx ends or when a failure cannot even be recorded; then the bus
// redelivers the batch and the appliers' dedupe makes that safe.
func (g *Guard) Handle(ctx context.Context, batch []*message.Message) error {
	start := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.loaded {
		if err := g.loadHeld(ctx); err != nil {
			return err
		}
	}
	envs := make([]events.Envelope, 0, len(batch))
	for _, m := range batch {
		var e events.Envelope
		if err := DecodeEnvelope(m.Payload, &e); err != nil {
			// A corrupt copy on the bus: the log holds the event itself.
			// A message that is no event of the log is nothing to apply.
			if _, perr := uuid.Parse(m.UUID); perr != nil {
				g.log.Error(g.name+": skipping a bus message that is not an event", "id", m.UUID, "err", err)
				continue
			}
			stored, rerr := g.store.ReadByID(ctx, m.UUID)
			if errors.Is(rerr, pgx.ErrNoRows) {
				g.log.Error(g.name+": skipping a bus message that is not an event", "id", m.UUID, "err", err)
				continue
			}
			if rerr != nil {
				return fmt.Errorf("decode event %s: %w (and reading it from the log: %v)", m.UUID, err, rerr)
			}
			e = stored
		}
		envs = append(envs, e)
	}
	return g.applyBatch(ctx, start, envs)
}

// applyBatch applies all (minus held owners' and skipped events),
// isolating failures, then reports every event's seq and records the
// highest (g.mu held).
func (g *Guard) applyBatch(ctx context.Context, start time.Time, all []events.Envelope) error {
	seqs := make([]int64, len(all))
	var maxSeq int64
	for i, e := range all {
		seqs[i] = e.Seq
		maxSeq = max(maxSeq, e.Seq)
		if e.Type == events.ProjectionEventSkipped {
			if err := g.skip(ctx, e); err != nil {
				return err
			}
		}
	}
	envs := make([]events.Envelope, 0, len(all))
	for _, e := range all {
		if _, held := g.held[e.OwnerID]; !held && !g.skipped[e.ID] {
			envs = append(envs, e)
		}
	}
	if len(envs) > 0 {
		err := g.a.Apply(ctx, envs)
		if g.obs != nil {
			g.obs.BatchApplied(ctx, g.obsName, start, envs, err)
		}
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			if err := g.isolate(ctx, envs, err); err != nil {
				return err
			}
		}
	}
	if g.processed != nil && len(seqs) > 0 {
		if err := g.processed(ctx, seqs); err != nil {
			return err
		}
	}
	return g.recordPosition(ctx, maxSeq)
}

// isolate applies envs one at a time after the batch failed with batchErr,
// parking each event that still fails after its retries.
func (g *Guard) isolate(ctx context.Context, envs []events.Envelope, batchErr error) error {
	g.log.Warn(g.name+": batch failed; applying its events one at a time", "events", len(envs), "err", batchErr)
	for _, e := range envs {
		if _, held := g.held[e.OwnerID]; held {
			continue // an earlier event of this owner was parked in this batch
		}
		err := g.applyWithRetries(ctx, e)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if transient(err) {
			// An outage or a race, not this event's fault: nothing is parked
			// and no owner held; the bus redelivers the batch with backoff.
			return fmt.Errorf("%s: event %s (%s) failed %d times on an outage; the batch is redelivered: %w", g.name, e.ID, e.Type, g.opts.Tries, err)
		}
		if err := g.park(ctx, e, err, g.opts.Tries); err != nil {
			return err
		}
	}
	return nil
}

func (g *Guard) applyWithRetries(ctx context.Context, e events.Envelope) error {
	wait := g.opts.Backoff
	var err error
	for attempt := 1; ; attempt++ {
		if err = g.a.Apply(ctx, []events.Envelope{e}); err == nil || ctx.Err() != nil || attempt == g.opts.Tries {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// park records e as parked and holds its owner.
func (g *Guard) park(ctx context.Context, e events.Envelope, cause error, attempts int) error {
	if _, err := uuid.Parse(e.OwnerID); err != nil {
		return fmt.Errorf("%s: event %s cannot be applied (%v) and has no owner to hold: %w", g.name, e.ID, cause, err)
	}
	msg := cause.Error()
	if len(msg) > 4000 {
		msg = msg[:4000]
	}
	_, err := g.pool.Exec(ctx, `INSERT INTO projection_parked (projection, event_id, seq, owner_id, event_type, error, attempts)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (projection, event_id) DO UPDATE SET error = EXCLUDED.error, attempts = projection_parked.attempts + EXCLUDED.attempts,
			parked_at = now(), retry_requested_at = NULL`,
		g.name, e.ID, e.Seq, e.OwnerID, e.Type, msg, attempts)
	if err != nil {
		return fmt.Errorf("%s: park event %s after: %v: %w", g.name, e.ID, cause, err)
	}
	g.held[e.OwnerID] = e.ID
	g.publishHeld()
	g.log.Error(g.name+": event parked; its owner's later events are held until `critic projections retry`",
		"event", e.ID, "type", e.Type, "owner", e.OwnerID, "err", msg)
	return nil
}

func (g *Guard) recordPosition(ctx context.Context, seq int64) error {
	if seq <= 0 {
		return nil
	}
	_, err := g.pool.Exec(ctx, `INSERT INTO projection_positions (projection, seq, updated_at) VALUES ($1, $2, now())
		ON CONFLICT (projection) DO UPDATE SET seq = GREATEST(projection_positions.seq, EXCLUDED.seq), updated_at = now()`, g.name, seq)
	return err
}
