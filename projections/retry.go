package projections

import (
	"context"
	"errors"
	"time"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/pg"
	"github.com/jackc/pgx/v5"
)

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
	ids, err := pg.Append(ctx, g.pool, nil, pgx.RowTo[string], `SELECT event_id::text FROM projection_parked
		WHERE projection = $1 AND retry_requested_at IS NOT NULL ORDER BY seq`, g.name)
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
