package readmodel

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/platform/eventstore"
)

// Waiter gives the API read-your-writes: after a command appends its events,
// the handler waits until the read model has applied the last of them. One
// owner's events are applied in order, so the last one implies the rest. The
// waiter listens for the projection's notifications (so it also works when
// the projection runs in another process) and polls as a fallback.
type Waiter struct {
	pool    *pgxpool.Pool
	timeout time.Duration

	// catch-up (WithCatchUp): after catchUpAfter without the projection,
	// the waiter applies the caller's events itself.
	proj         *Projection
	store        *eventstore.Store
	catchUpAfter time.Duration
	log          *slog.Logger
	lagLog       rateLimit

	mu      sync.Mutex
	changed chan struct{}
}

// NewWaiter returns a waiter bounded by timeout (default 5 s).
func NewWaiter(pool *pgxpool.Pool, timeout time.Duration) *Waiter {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &Waiter{pool: pool, timeout: timeout, changed: make(chan struct{})}
}

// DefaultCatchUpAfter is how long a write waits for the bus consumer before
// the waiter looks whether the consumer is making progress on the owner's
// events, and then every half of it: when the consumer did not move for
// half of it, the waiter applies the events itself. Well above the
// consumer's usual latency (milliseconds), and short enough that a crashed
// instance costs a write under a second.
const DefaultCatchUpAfter = 500 * time.Millisecond

// WithCatchUp makes w apply the caller's own events (Projection.CatchUp)
// when the projection has not applied them after `after` (0 →
// DefaultCatchUpAfter): a write is then answered as soon as its events are
// in the read model even while the bus consumer of its owner's partition is
// dead and the consumer group has not noticed. log (nil: slog.Default)
// reports catch-ups and timeouts.
func (w *Waiter) WithCatchUp(proj *Projection, store *eventstore.Store, after time.Duration, log *slog.Logger) *Waiter {
	if after <= 0 {
		after = DefaultCatchUpAfter
	}
	if log == nil {
		log = slog.Default()
	}
	w.proj, w.store, w.catchUpAfter, w.log = proj, store, after, log
	return w
}

// Listen forwards the projection's notifications until ctx ends.
func (w *Waiter) Listen(ctx context.Context) {
	for ctx.Err() == nil {
		conn, err := w.pool.Acquire(ctx)
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if _, err := conn.Exec(ctx, "LISTEN "+AppliedChannel); err == nil {
			for {
				if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
					break
				}
				w.broadcast()
			}
		}
		conn.Hijack().Close(context.Background()) // a connection left mid-LISTEN is not reused
	}
}

func (w *Waiter) broadcast() {
	w.mu.Lock()
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

// Wait blocks until eventID is applied, or fails with UnavailableError after
// the timeout (the write is stored; only the read lags), or at once with
// ProjectionParkedError when the owner's events are held behind a parked one.
// An empty eventID is a command that appended nothing: there is nothing to
// wait for.
func (w *Waiter) Wait(ctx context.Context, eventID string) error {
	if eventID == "" {
		return nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	poll := 2 * time.Millisecond
	var nextCatchUp time.Time
	progress := int64(-1) // the owner's applied position at the last look
	if w.proj != nil {
		nextCatchUp = start.Add(w.catchUpAfter)
	}
	for {
		w.mu.Lock()
		ch := w.changed
		w.mu.Unlock()
		var ok bool
		var parkedID, parkedType *string
		// Applied, or held back behind a parked event of the same owner
		// (then waiting cannot help: say so at once).
		if err := w.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM readmodel_applied WHERE event_id = $1), p.event_id::text, p.event_type
			FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT pp.event_id, pp.event_type FROM events e JOIN projection_parked pp
				ON pp.owner_id = e.owner_id AND pp.projection = $2 WHERE e.id = $1 ORDER BY pp.seq LIMIT 1) p ON true`,
			eventID, Name).Scan(&ok, &parkedID, &parkedType); err != nil && ctx.Err() == nil {
			return err
		}
		if ok {
			return nil
		}
		if parkedID != nil {
			return &domain.ProjectionParkedError{Projection: Name, EventID: *parkedID, EventType: *parkedType}
		}
		if !nextCatchUp.IsZero() && !time.Now().Before(nextCatchUp) && ctx.Err() == nil {
			if w.catchUp(ctx, eventID, start, &progress) {
				continue // look again: applied now, or parked
			}
			nextCatchUp = time.Now().Add(w.catchUpAfter / 2)
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				w.logger().Warn("write timed out waiting for the read-model projection; answering 503 (the write is stored)",
					"event", eventID, "waited", time.Since(start).Round(time.Millisecond))
			}
			return &domain.UnavailableError{Message: "the write was stored but the read model has not caught up yet; retry the read shortly"}
		case <-ch:
		case <-time.After(poll):
			poll = min(poll*2, 100*time.Millisecond)
		}
	}
}

func (w *Waiter) logger() *slog.Logger {
	if w.log != nil {
		return w.log
	}
	return slog.Default()
}

// catchUp applies the owner's missing events up to eventID and says whether
// it applied any. It first looks whether the owner's applied position moved
// since its last look (*progress): a consumer working through a backlog (a
// bulk import) is left to it, so only a consumer that made no progress for
// a while — gone, or stuck — is stood in for. A failure only logs: the wait
// goes on, and the bus consumer (or the next catch-up) may still get there.
func (w *Waiter) catchUp(ctx context.Context, eventID string, start time.Time, progress *int64) bool {
	owner, seq, err := eventPosition(ctx, w.pool, eventID)
	if err == nil {
		var pos int64
		if pos, err = w.proj.lastApplied(ctx, owner, seq); err == nil {
			if *progress < 0 || pos != *progress {
				*progress = pos
				if pos >= seq {
					return true // applied meanwhile
				}
				return false
			}
			var n int
			n, err = w.proj.CatchUp(ctx, w.store, owner, seq)
			if n > 0 {
				if w.lagLog.allow(time.Now()) {
					w.log.Warn("read-model projection lagging: a write applied its owner's events itself (the consumer of its partition is gone or behind)",
						"owner", owner, "events", n, "waited", time.Since(start).Round(time.Millisecond), "similar_since_last", w.lagLog.take())
				}
				return true
			}
		}
	}
	if err != nil && ctx.Err() == nil {
		w.log.Warn("read-model catch-up failed; still waiting for the projection", "event", eventID, "err", err)
	}
	return false
}

// rateLimit lets one log line through per interval and counts the rest, so
// a lagging projection is reported without a line per request.
type rateLimit struct {
	mu      sync.Mutex
	next    time.Time
	skipped int
}

const rateLimitEvery = 10 * time.Second

func (r *rateLimit) allow(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Before(r.next) {
		r.skipped++
		return false
	}
	r.next = now.Add(rateLimitEvery)
	return true
}

// take returns and resets how many lines were held back.
func (r *rateLimit) take() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.skipped
	r.skipped = 0
	return n
}
