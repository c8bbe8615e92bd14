package usecase

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/duck"
	"github.com/criticml/critic/projections/snapshot"
)

// QueryLog is what the SQL use case reads from the event store: the log
// position of an owner's newest event, and a parked event's type.
type QueryLog interface {
	OwnerHead(ctx context.Context, owner string) (int64, error)
	ReadByID(ctx context.Context, id string) (events.Envelope, error)
}

// DefaultQueryWait is how long POST /query waits for the snapshot to reach
// the position it needs before answering snapshot_catching_up.
const DefaultQueryWait = 2 * time.Second

// Query is POST /query (REST) and QueryService.Query (Connect): read-only
// SQL over the caller's snapshot, answered only from a snapshot that has
// applied every event up to the caller's last write and up to the log head
// when this instance started. Without that rule a new instance, or one
// whose snapshot lags, would answer from partial data (0 rows for a while)
// and look healthy doing it.
type Query struct {
	snaps Snapshots
	pos   *snapshot.Position
	log   QueryLog
	held  func(owner string) (eventID string, held bool)
	group string
	start int64
	wait  time.Duration
}

// Snapshots answers one query over an owner's snapshot: duck.Snapshots in
// this process, or the query process (handlers/queryhost).
type Snapshots interface {
	Query(ctx context.Context, owner, sql string) (*duck.Result, error)
}

// NewQuery returns the use case over snaps. pos is the snapshot's position
// (nil: answer from whatever the files hold, for tests of other surfaces);
// start is the log head when the instance started; held reports owners
// whose snapshot updates are parked (projections.Guard.Held, group being its
// name); wait ≤ 0 is DefaultQueryWait.
func NewQuery(snaps Snapshots, pos *snapshot.Position, log QueryLog, held func(string) (string, bool), group string,
	start int64, wait time.Duration) *Query {
	if wait <= 0 {
		wait = DefaultQueryWait
	}
	return &Query{snaps: snaps, pos: pos, log: log, held: held, group: group, start: start, wait: wait}
}

// Run answers sql for owner.
func (q *Query) Run(ctx context.Context, owner, sql string) (*duck.Result, error) {
	if q == nil || q.snaps == nil {
		return nil, errors.New("usecase: query snapshots are not configured")
	}
	if q.pos != nil {
		if err := q.settle(ctx, owner); err != nil {
			return nil, err
		}
	}
	return q.snaps.Query(ctx, owner, sql)
}

// settle waits (bounded) until the snapshot reflects everything owner wrote
// and the log as of the instance's start.
func (q *Query) settle(ctx context.Context, owner string) error {
	if q.held != nil {
		if id, held := q.held(owner); held {
			perr := &domain.ProjectionParkedError{Projection: q.group, EventID: id}
			if e, err := q.log.ReadByID(ctx, id); err == nil {
				perr.EventType = e.Type
			}
			return perr
		}
	}
	last, err := q.log.OwnerHead(ctx, owner)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Without the log position the answer could be partial: refuse.
		slog.WarnContext(ctx, "query: cannot read the caller's log position", "err", err)
		return &domain.UnavailableError{Message: "cannot read the event log to check that this instance's query snapshot " +
			"has your latest writes (is PostgreSQL reachable?); retry shortly"}
	}
	needed := max(q.start, last)
	wctx, cancel := context.WithTimeout(ctx, q.wait)
	defer cancel()
	err = q.pos.WaitFor(wctx, needed)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
