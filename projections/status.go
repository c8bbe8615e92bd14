package projections

import (
	"context"
	"fmt"
	"time"

	"github.com/criticml/critic/platform/pg"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

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
	pos, err := pg.Append(ctx, pool, nil, func(r pgx.CollectableRow) (p Position, err error) {
		err = r.Scan(&p.Projection, &p.Seq, &p.Lag, &p.UpdatedAt)
		return p, err
	}, `SELECT p.projection, p.seq, (SELECT count(*) FROM events e WHERE e.seq > p.seq), p.updated_at
		FROM projection_positions p ORDER BY p.projection`)
	if err != nil {
		return nil, nil, err
	}
	parked, err := pg.Append(ctx, pool, nil, func(r pgx.CollectableRow) (p Parked, err error) {
		err = r.Scan(&p.Projection, &p.EventID, &p.Seq, &p.OwnerID, &p.EventType, &p.Error, &p.Attempts, &p.ParkedAt, &p.RetryRequested)
		return p, err
	}, `SELECT projection, event_id::text, seq, owner_id::text, event_type, error, attempts, parked_at,
		retry_requested_at IS NOT NULL FROM projection_parked ORDER BY projection, seq`)
	return pos, parked, err
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
	out := map[string]int64{}
	var name string
	var n int64
	err := pg.Each(ctx, pool, []any{&name, &n}, func() error {
		out[name] = n
		return nil
	}, `SELECT projection, count(*) FROM projection_parked GROUP BY projection`)
	return out, err
}
