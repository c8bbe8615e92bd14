package readmodel

import (
	"context"
	"errors"
	"hash/fnv"
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
	ownerLocks   [64]chanLock // catch-ups by owner hash, one at a time

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
//
// With WithCatchUp, a wait whose owner's events make no progress applies
// them itself (see catchUp), and a wait that reaches its timeout applies
// them itself once more whatever the consumer is doing, bounded by another
// timeout: a stored write is then answered 503 only when PostgreSQL cannot
// apply it either.
func (w *Waiter) Wait(ctx context.Context, eventID string) error {
	if eventID == "" {
		return nil
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, w.timeout)
	err := w.wait(wctx, eventID, start)
	cancel()
	if !errors.Is(err, errTimedOut) {
		return err
	}
	if w.proj != nil && ctx.Err() == nil {
		fctx, fcancel := context.WithTimeout(ctx, w.timeout)
		defer fcancel()
		err := w.forceCatchUp(fctx, eventID)
		if err == nil {
			if err := w.applied(fctx, eventID); !errors.Is(err, errNotYet) {
				if err == nil {
					w.logger().Warn("read-model projection too slow: a write applied its owner's events itself at the end of its wait",
						"event", eventID, "waited", time.Since(start).Round(time.Millisecond))
				}
				return err
			}
		} else if ctx.Err() == nil {
			w.logger().Warn("read-model catch-up at the end of a wait failed", "event", eventID, "err", err)
		}
	}
	if ctx.Err() == nil {
		w.logger().Warn("write timed out waiting for the read-model projection; answering 503 (the write is stored)",
			"event", eventID, "waited", time.Since(start).Round(time.Millisecond))
	}
	return &domain.UnavailableError{Message: "the write was stored but the read model has not caught up yet; retry the read shortly"}
}

var (
	errTimedOut = errors.New("readmodel: wait timed out")
	errNotYet   = errors.New("readmodel: not applied yet")
)

// applied says whether eventID is applied (nil), not yet (errNotYet), or
// held back behind a parked event of the same owner (ProjectionParkedError:
// waiting cannot help, so say so at once).
func (w *Waiter) applied(ctx context.Context, eventID string) error {
	var ok bool
	var parkedID, parkedType *string
	if err := w.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM readmodel_applied WHERE event_id = $1), p.event_id::text, p.event_type
		FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT pp.event_id, pp.event_type FROM events e JOIN projection_parked pp
			ON pp.owner_id = e.owner_id AND pp.projection = $2 WHERE e.id = $1 ORDER BY pp.seq LIMIT 1) p ON true`,
		eventID, Name).Scan(&ok, &parkedID, &parkedType); err != nil {
		return err
	}
	if ok {
		return nil
	}
	if parkedID != nil {
		return &domain.ProjectionParkedError{Projection: Name, EventID: *parkedID, EventType: *parkedType}
	}
	return errNotYet
}

// wait polls (woken by the projection's notifications) until eventID is
// applied or parked, catching up where the consumer stalls; errTimedOut
// when ctx's deadline passes first.
func (w *Waiter) wait(ctx context.Context, eventID string, start time.Time) error {
	poll := 2 * time.Millisecond
	var nextLook time.Time
	st := stall{pos: -1}
	if w.proj != nil {
		nextLook = start.Add(w.catchUpAfter)
	}
	for {
		w.mu.Lock()
		ch := w.changed
		w.mu.Unlock()
		err := w.applied(ctx, eventID)
		if ctx.Err() != nil {
			return errTimedOut
		}
		if !errors.Is(err, errNotYet) {
			return err
		}
		if !nextLook.IsZero() && !time.Now().Before(nextLook) {
			if w.catchUp(ctx, eventID, start, &st) {
				continue // look again: applied now, or parked
			}
			nextLook = time.Now().Add(w.catchUpAfter / 2)
		}
		select {
		case <-ctx.Done():
			return errTimedOut
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

// stall is what a wait saw of its owner's progress.
type stall struct {
	pos   int64     // the owner's applied position at the last look (-1: none yet)
	since time.Time // when pos last changed
}

// catchUp applies the owner's missing events up to eventID when the
// projection stopped making progress on them, and says whether it applied
// any. It looks first: while the owner's applied position moves, or for a
// while as long as some projection batch is being applied (its lock is
// held: a consumer working through a backlog such as a bulk import), the
// consumer is left to it; only a consumer that made no progress on the
// owner for half of catchUpAfter with nothing being applied, or for two
// catchUpAfters whatever else happens — gone, or stuck — is stood in for.
// A failure only logs: the wait goes on, and the bus consumer (or the next
// catch-up) may still get there.
func (w *Waiter) catchUp(ctx context.Context, eventID string, start time.Time, st *stall) bool {
	owner, seq, err := eventPosition(ctx, w.pool, eventID)
	if err == nil {
		var pos int64
		if pos, err = w.proj.lastApplied(ctx, owner, seq); err == nil {
			now := time.Now()
			if st.pos < 0 || pos != st.pos {
				st.pos, st.since = pos, now
				return pos >= seq // applied meanwhile: look again
			}
			stalled := now.Sub(st.since)
			if stalled < 2*w.catchUpAfter {
				var busy bool
				if err = w.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = $1 AND objsubid = 1 AND granted)`,
					int64(applyLockKey)).Scan(&busy); err == nil && (busy || stalled < w.catchUpAfter/2) {
					return false
				}
			}
			if err == nil {
				var n int
				n, err = w.catchUpOwner(ctx, owner, seq)
				if n > 0 {
					if w.lagLog.allow(time.Now()) {
						w.log.Warn("read-model projection lagging: a write applied its owner's events itself (the consumer of its partition is gone or behind)",
							"owner", owner, "events", n, "waited", time.Since(start).Round(time.Millisecond), "similar_since_last", w.lagLog.take())
					}
					return true
				}
			}
		}
	}
	if err != nil && ctx.Err() == nil {
		w.log.Warn("read-model catch-up failed; still waiting for the projection", "event", eventID, "err", err)
	}
	return false
}

// forceCatchUp applies the owner's missing events up to eventID whatever
// the consumer is doing (the end of a wait).
func (w *Waiter) forceCatchUp(ctx context.Context, eventID string) error {
	owner, seq, err := eventPosition(ctx, w.pool, eventID)
	if err != nil {
		return err
	}
	_, err = w.catchUpOwner(ctx, owner, seq)
	return err
}

// catchUpOwner runs one owner's catch-up at a time in this process: the
// writes of one account that all wait (a client importing in parallel)
// share it instead of each reading and applying the same events.
func (w *Waiter) catchUpOwner(ctx context.Context, owner string, seq int64) (int, error) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(owner))
	lock := &w.ownerLocks[h.Sum32()%uint32(len(w.ownerLocks))]
	select {
	case lock.ch() <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-lock.ch() }()
	return w.proj.CatchUp(ctx, w.store, owner, seq)
}

// chanLock is a mutex a waiter can give up on (ctx).
type chanLock struct {
	once sync.Once
	c    chan struct{}
}

func (l *chanLock) ch() chan struct{} {
	l.once.Do(func() { l.c = make(chan struct{}, 1) })
	return l.c
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
