package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/eventstore"
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
// Transient outages of the projection's own database do not park anything:
// parking needs that database, so the batch fails and is redelivered.
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
	for k, v := range g.held {
		view[k] = v
	}
	g.heldView.Store(&view)
}

// GuardOptions bound the retries before an event is parked.
type GuardOptions struct {
	Tries   int           // attempts per event before parking it (default 4)
	Backoff time.Duration // wait before the second attempt, doubling after (default 250 ms)
	Poll    time.Duration // how often to look for operator retries (default 1 s)
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

// Observe reports every batch the guard applies to the observers named in
// opts (projections.Observed); it returns g for chaining.
func (g *Guard) Observe(opts ...Option) *Guard {
	var ro runOptions
	for _, o := range opts {
		o(&ro)
	}
	g.obs, g.obsName = ro.obs, ro.name
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
	seqs := make([]int64, 0, len(envs))
	var maxSeq int64
	for _, e := range envs {
		seqs = append(seqs, e.Seq)
		maxSeq = max(maxSeq, e.Seq)
	}
	return g.applyBatch(ctx, time.Now(), envs, seqs, maxSeq)
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
	err = consume(ctx, topic, maxBatch, maxWait, g.Handle)
	cancel()
	<-done
	return err
}

// loadHeld reads which owners are held from projection_parked (g.mu held):
// parked events outlive the process.
func (g *Guard) loadHeld(ctx context.Context) error {
	rows, err := g.pool.Query(ctx, `SELECT DISTINCT ON (owner_id) owner_id::text, event_id::text FROM projection_parked
		WHERE projection = $1 ORDER BY owner_id, seq`, g.name)
	if err != nil {
		return fmt.Errorf("%s: load parked events: %w", g.name, err)
	}
	defer rows.Close()
	held := map[string]string{}
	for rows.Next() {
		var owner, id string
		if err := rows.Scan(&owner, &id); err != nil {
			return err
		}
		held[owner] = id
	}
	if err := rows.Err(); err != nil {
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

// Skipped is the set of event ids operators skipped
// (projection.event_skipped): no projection applies them, live or in a
// replay.
type Skipped map[string]bool

// LoadSkipped reads every skip from the log. A replay loads it before it
// starts, since a skip is appended after the event it skips.
func LoadSkipped(ctx context.Context, store *eventstore.Store) (Skipped, error) {
	rows, err := store.Pool().Query(ctx, `SELECT payload->>'event_id' FROM events WHERE type = $1`, events.ProjectionEventSkipped)
	if err != nil {
		return nil, fmt.Errorf("load skipped events: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("load skipped events: %w", err)
	}
	out := make(Skipped, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// Without returns envs less the skipped events (envs itself when none is).
func (s Skipped) Without(envs []events.Envelope) []events.Envelope {
	if len(s) == 0 {
		return envs
	}
	n := 0
	for _, e := range envs {
		if s[e.ID] {
			n++
		}
	}
	if n == 0 {
		return envs
	}
	out := make([]events.Envelope, 0, len(envs)-n)
	for _, e := range envs {
		if !s[e.ID] {
			out = append(out, e)
		}
	}
	return out
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
	seqs := make([]int64, 0, len(batch))
	var maxSeq int64
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
		maxSeq = max(maxSeq, e.Seq)
		seqs = append(seqs, e.Seq)
		envs = append(envs, e)
	}
	return g.applyBatch(ctx, start, envs, seqs, maxSeq)
}

// applyBatch applies envs (minus held owners' events), isolating failures,
// then reports seqs and records maxSeq (g.mu held).
func (g *Guard) applyBatch(ctx context.Context, start time.Time, all []events.Envelope, seqs []int64, maxSeq int64) error {
	for _, e := range all {
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

// serveRetries polls for parked events an operator asked to retry.
func (g *Guard) serveRetries(ctx context.Context) {
	t := time.NewTicker(g.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := g.RetryRequested(ctx); err != nil && ctx.Err() == nil {
			g.log.Warn(g.name+": operator retries", "err", err)
		}
	}
}

// RetryRequested retries every parked event an operator asked to retry.
func (g *Guard) RetryRequested(ctx context.Context) error {
	rows, err := g.pool.Query(ctx, `SELECT event_id::text FROM projection_parked
		WHERE projection = $1 AND retry_requested_at IS NOT NULL ORDER BY seq`, g.name)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := g.retry(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// retry applies a parked event again (one attempt: the operator says the
// cause is fixed), then the owner's held events from the log. Holding the
// mutex keeps bus batches out meanwhile, so no event of the owner can slip
// between the catch-up and the release.
func (g *Guard) retry(ctx context.Context, id string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.publishHeld()
	if !g.loaded {
		if err := g.loadHeld(ctx); err != nil {
			return err
		}
	}
	e, err := g.store.ReadByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		_, err = g.pool.Exec(ctx, `UPDATE projection_parked SET retry_requested_at = NULL, error = 'the event is not in the log' WHERE projection = $1 AND event_id = $2`, g.name, id)
		return err
	}
	if err != nil {
		return err
	}
	if err := g.a.Apply(ctx, []events.Envelope{e}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return g.park(ctx, e, err, 1)
	}
	g.log.Info(g.name+": parked event applied on retry; applying the owner's held events", "event", id, "owner", e.OwnerID)
	return g.release(ctx, e.OwnerID, id, e.Seq)
}

// skip acts on a projection.event_skipped event (g.mu held): the skipped
// event is never applied from now on, and when it is the event holding its
// owner here, the owner's held events are applied and the owner released.
func (g *Guard) skip(ctx context.Context, e events.Envelope) error {
	var p events.ProjectionEventSkippedV1
	if err := e.Decode(&p); err != nil || p.EventID == "" {
		g.log.Error(g.name+": unreadable skip event; nothing skipped", "event", e.ID, "err", err)
		return nil
	}
	if g.skipped[p.EventID] && g.held[e.OwnerID] != p.EventID {
		return nil // already acted on (a redelivery)
	}
	g.skipped[p.EventID] = true
	if g.held[e.OwnerID] != p.EventID {
		// Not what holds the owner here (parked by another projection
		// only): nothing to release, but it is never applied from now on.
		_, err := g.pool.Exec(ctx, `DELETE FROM projection_parked WHERE projection = $1 AND event_id = $2`, g.name, p.EventID)
		return err
	}
	g.log.Warn(g.name+": parked event skipped by an operator; applying the owner's held events", "event", p.EventID,
		"type", p.EventType, "owner", e.OwnerID, "reason", p.Reason)
	defer g.publishHeld()
	return g.release(ctx, e.OwnerID, p.EventID, p.Seq)
}

// release lets owner flow again once its parked event id (at seq) was
// applied on retry or skipped: the owner's held events are applied from the
// log, in order (skipped ones passed over), then the parked row goes
// (g.mu held). A held event that fails is parked in its turn and holds the
// owner again; its own retry or skip resumes from there.
func (g *Guard) release(ctx context.Context, owner, id string, seq int64) error {
	after := seq
	for {
		batch, err := g.store.ReadOwnerAfter(ctx, owner, after, 1000)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			break
		}
		after = batch[len(batch)-1].Seq
		batch = g.skipped.Without(batch)
		if len(batch) == 0 {
			continue
		}
		if err := g.a.Apply(ctx, batch); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			delete(g.held, owner)
			if err := g.isolate(ctx, batch, err); err != nil {
				g.held[owner] = id
				return err
			}
			if _, held := g.held[owner]; held {
				_, err := g.pool.Exec(ctx, `DELETE FROM projection_parked WHERE projection = $1 AND event_id = $2`, g.name, id)
				return err
			}
		}
	}
	if _, err := g.pool.Exec(ctx, `DELETE FROM projection_parked WHERE projection = $1 AND event_id = $2`, g.name, id); err != nil {
		return err
	}
	delete(g.held, owner)
	return nil
}

// Parked is one parked event as `critic projections status` shows it.
type Parked struct {
	Projection     string
	EventID        string
	Seq            int64
	OwnerID        string
	EventType      string
	Error          string
	Attempts       int
	ParkedAt       time.Time
	RetryRequested bool
}

// Position is how far a projection has come and how far it trails the log.
type Position struct {
	Projection string
	Seq        int64
	Lag        int64 // events in the log after Seq
	UpdatedAt  time.Time
}

// Status reads every projection's position and parked events.
func Status(ctx context.Context, pool *pgxpool.Pool) ([]Position, []Parked, error) {
	rows, err := pool.Query(ctx, `SELECT p.projection, p.seq, (SELECT count(*) FROM events e WHERE e.seq > p.seq), p.updated_at
		FROM projection_positions p ORDER BY p.projection`)
	if err != nil {
		return nil, nil, err
	}
	var pos []Position
	for rows.Next() {
		var p Position
		if err := rows.Scan(&p.Projection, &p.Seq, &p.Lag, &p.UpdatedAt); err != nil {
			rows.Close()
			return nil, nil, err
		}
		pos = append(pos, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	rows, err = pool.Query(ctx, `SELECT projection, event_id::text, seq, owner_id::text, event_type, error, attempts, parked_at,
		retry_requested_at IS NOT NULL FROM projection_parked ORDER BY projection, seq`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var parked []Parked
	for rows.Next() {
		var p Parked
		if err := rows.Scan(&p.Projection, &p.EventID, &p.Seq, &p.OwnerID, &p.EventType, &p.Error, &p.Attempts, &p.ParkedAt, &p.RetryRequested); err != nil {
			return nil, nil, err
		}
		parked = append(parked, p)
	}
	return pos, parked, rows.Err()
}

// RequestRetry asks the running projections that parked eventID to retry
// it; it returns how many parked rows it marked (0: nothing parked by that id).
func RequestRetry(ctx context.Context, pool *pgxpool.Pool, eventID string) (int64, error) {
	if _, err := uuid.Parse(eventID); err != nil {
		return 0, fmt.Errorf("%q is not an event id (a UUID, as `critic projections status` lists them)", eventID)
	}
	tag, err := pool.Exec(ctx, `UPDATE projection_parked SET retry_requested_at = now() WHERE event_id = $1`, eventID)
	return tag.RowsAffected(), err
}

// ParkedCounts is how many events each projection has parked now (the
// critic_projection_parked_events gauge): a number above zero means an
// account is held until an operator runs `critic projections retry`.
func ParkedCounts(ctx context.Context, pool *pgxpool.Pool) (map[string]int64, error) {
	rows, err := pool.Query(ctx, `SELECT projection, count(*) FROM projection_parked GROUP BY projection`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, rows.Err()
}
