package readmodel

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/criticml/critic/domain"
)

// Waiter gives the API read-your-writes: after a command appends its events,
// the handler waits until the read model has applied the last of them. One
// owner's events are applied in order, so the last one implies the rest. The
// waiter listens for the projection's notifications (so it also works when
// the projection runs in another process) and polls as a fallback.
type Waiter struct {
	pool    *pgxpool.Pool
	timeout time.Duration

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
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	poll := 2 * time.Millisecond
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
		select {
		case <-ctx.Done():
			return &domain.UnavailableError{Message: "the write was stored but the read model has not caught up yet; retry the read shortly"}
		case <-ch:
		case <-time.After(poll):
			poll = min(poll*2, 100*time.Millisecond)
		}
	}
}
