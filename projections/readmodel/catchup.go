package readmodel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg"
)

// CatchUp applies, from the event store, every event of owner up to and
// including seq upto that the read model has not applied yet, in log order,
// and returns how many it applied.
//
// It exists for failover: the bus hands each owner's events to one member of
// the projection's consumer group, and when that member dies (kill -9, a lost
// machine) its partitions stay with it until the group notices — the
// session timeout, tens of seconds — while writes of those owners on every
// other instance would wait for it. The read-your-writes path calls CatchUp
// instead of waiting that out. It is safe beside the bus consumer: Apply
// takes the projection's lock and skips events already applied, and one
// owner's applied events always form a prefix of that owner's log (the bus
// delivers them in order, and CatchUp applies the whole missing run, never
// a later event before an earlier one), so a run ending at upto is all that
// can be missing. An owner held behind a parked event is left alone: the
// guard keeps its later events back on purpose until an operator retries.
func (p *Projection) CatchUp(ctx context.Context, store *eventstore.Store, owner string, upto int64) (int, error) {
	var held bool
	if err := p.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM projection_parked WHERE projection = $1 AND owner_id = $2)`,
		Name, owner).Scan(&held); err != nil {
		return 0, err
	}
	if held {
		return 0, nil
	}
	after, err := p.lastApplied(ctx, owner, upto)
	if err != nil {
		return 0, err
	}
	return p.catchUpFrom(ctx, store, owner, after, upto)
}

// catchUpFrom applies owner's events in (after, upto].
func (p *Projection) catchUpFrom(ctx context.Context, store *eventstore.Store, owner string, after, upto int64) (int, error) {
	applied := 0
	for after < upto {
		envs, err := store.ReadOwnerAfter(ctx, owner, after, catchUpPage)
		if err != nil {
			return applied, err
		}
		n := 0
		for n < len(envs) && envs[n].Seq <= upto {
			n++
		}
		if n == 0 {
			return applied, nil
		}
		if err := p.Apply(ctx, envs[:n]); err != nil {
			return applied, fmt.Errorf("readmodel: catch up owner %s to seq %d: %w", owner, upto, err)
		}
		applied += n
		after = envs[n-1].Seq
	}
	return applied, nil
}

// catchUpPage bounds one catch-up transaction.
const catchUpPage = 500

// lastApplied returns the seq of owner's latest applied event at or before
// upto (0 when none): walking back from upto, the first applied event ends
// the missing run.
func (p *Projection) lastApplied(ctx context.Context, owner string, upto int64) (int64, error) {
	before := upto + 1
	for {
		n := 0
		found := int64(-1)
		var seq int64
		var ok bool
		if err := pg.Each(ctx, p.pool, []any{&seq, &ok}, func() error {
			n++
			before = seq
			if ok && found < 0 {
				found = seq
			}
			return nil
		}, `SELECT e.seq, EXISTS (SELECT 1 FROM readmodel_applied a WHERE a.event_id = e.id)
			FROM events e WHERE e.owner_id = $1 AND e.seq < $2 ORDER BY e.seq DESC LIMIT $3`, owner, before, catchUpPage); err != nil {
			return 0, err
		}
		if found >= 0 {
			return found, nil
		}
		if n < catchUpPage {
			return 0, nil
		}
	}
}

// eventPosition returns the owner and seq of a stored event.
func eventPosition(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, eventID string) (owner string, seq int64, err error) {
	err = q.QueryRow(ctx, `SELECT owner_id::text, seq FROM events WHERE id = $1`, eventID).Scan(&owner, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, fmt.Errorf("readmodel: event %s is not in the log", eventID)
	}
	return owner, seq, err
}

// RunStandby applies, every second until ctx ends, the events that have
// waited longer than after (0 → DefaultStandbyAfter) without reaching the
// read model, owner by owner (CatchUp). The read-your-writes path only
// catches up the caller's own events; events nobody waits for — a worker's
// results, what the dispatch projection appends — would otherwise stay out
// of the read model for as long as the consumer group needs to notice a dead
// member (its session timeout). Every API instance runs one; they share
// the projection's lock and dedupe, so a second one changes nothing. It
// looks only at events appended after it started (the bus consumers own the
// backlog a fresh instance finds) and skips owners held behind a parked
// event.
//
// from is the log position to look after; negative: the head when it
// starts.
func (p *Projection) RunStandby(ctx context.Context, store *eventstore.Store, after time.Duration, from int64, log *slog.Logger) {
	if after <= 0 {
		after = DefaultStandbyAfter
	}
	if log == nil {
		log = slog.Default()
	}
	low := from
	seen := map[string]int64{} // owner → applied position at the last pass
	var limited rateLimit
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if low < 0 {
			if err := p.pool.QueryRow(ctx, `SELECT COALESCE(max(seq), 0) FROM events`).Scan(&low); err != nil {
				low = -1
				continue
			}
		}
		next, n, err := p.standbyPass(ctx, store, low, after, seen)
		if err != nil {
			if ctx.Err() == nil && limited.allow(time.Now()) {
				log.Warn("read-model standby: catching up stalled events failed; trying again", "err", err, "similar_since_last", limited.take())
			}
			continue
		}
		low = next
		if n > 0 && limited.allow(time.Now()) {
			log.Warn("read-model projection lagging: applied events its bus consumer had not (the consumer of their partition is gone or behind)",
				"events", n, "older_than", after, "similar_since_last", limited.take())
		}
	}
}

// DefaultStandbyAfter is how old an unapplied event must be before the
// standby applies it: far above the bus consumer's usual latency.
const DefaultStandbyAfter = time.Second

// standbyPass catches up every owner with an event in (low, …] older than
// after and not applied, and returns the new low-water mark (everything at
// or below it older than after was applied or held) and how many events it
// applied.
//
// An owner whose applied position moved since the last pass (seen) is left
// to its consumer, which is working through a backlog (a bulk import), not
// dead: only an owner that made no progress for a whole pass is caught up.
func (p *Projection) standbyPass(ctx context.Context, store *eventstore.Store, low int64, after time.Duration, seen map[string]int64) (int64, int, error) {
	var high int64
	if err := p.pool.QueryRow(ctx, `SELECT COALESCE(max(seq), $1) FROM events WHERE seq > $1 AND recorded_at < now() - $2::interval`,
		low, after).Scan(&high); err != nil {
		return low, 0, err
	}
	if high == low {
		return low, 0, nil
	}
	type owed struct {
		owner string
		upto  int64
	}
	todo, err := pg.Append(ctx, p.pool, nil, func(r pgx.CollectableRow) (o owed, err error) {
		err = r.Scan(&o.owner, &o.upto)
		return o, err
	}, `SELECT e.owner_id::text, max(e.seq) FROM events e
		WHERE e.seq > $1 AND e.seq <= $2
			AND NOT EXISTS (SELECT 1 FROM readmodel_applied a WHERE a.event_id = e.id)
			AND NOT EXISTS (SELECT 1 FROM projection_parked pp WHERE pp.projection = $3 AND pp.owner_id = e.owner_id)
		GROUP BY e.owner_id`, low, high, Name)
	if err != nil {
		return low, 0, err
	}
	applied := 0
	waiting := map[string]bool{}
	progressing := false
	for _, o := range todo {
		waiting[o.owner] = true
		pos, err := p.lastApplied(ctx, o.owner, o.upto)
		if err != nil {
			return low, applied, err
		}
		if prev, ok := seen[o.owner]; !ok || prev != pos {
			seen[o.owner] = pos // moving (or new): look again next pass
			progressing = true
			continue
		}
		n, err := p.catchUpFrom(ctx, store, o.owner, pos, o.upto)
		applied += n
		if err != nil {
			return low, applied, err
		}
		delete(seen, o.owner)
	}
	for owner := range seen {
		if !waiting[owner] {
			delete(seen, owner)
		}
	}
	if progressing {
		return low, applied, nil // keep the mark until those owners are done
	}
	return high, applied, nil
}
