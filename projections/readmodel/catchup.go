package readmodel

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/platform/eventstore"
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
		rows, err := p.pool.Query(ctx, `SELECT e.seq, EXISTS (SELECT 1 FROM readmodel_applied a WHERE a.event_id = e.id)
			FROM events e WHERE e.owner_id = $1 AND e.seq < $2 ORDER BY e.seq DESC LIMIT $3`, owner, before, catchUpPage)
		if err != nil {
			return 0, err
		}
		n := 0
		found := int64(-1)
		for rows.Next() {
			var seq int64
			var ok bool
			if err := rows.Scan(&seq, &ok); err != nil {
				rows.Close()
				return 0, err
			}
			n++
			before = seq
			if ok && found < 0 {
				found = seq
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
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
