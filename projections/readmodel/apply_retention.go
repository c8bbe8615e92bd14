package readmodel

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/pg"
)

// retentionAppliers project an account's retention period (issue 37).
var retentionAppliers = map[string]applier{
	events.UserRetentionSet: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.UserRetentionSetV1) error {
		return exec(ctx, tx, `UPDATE rm_users SET retention_days = $2 WHERE id = $1`, p.UserID, p.Days)
	}),
}

// Retention is the account's retention period in days; nil when off.
func (q *Queries) Retention(ctx context.Context, owner string) (*int, error) {
	var days *int
	err := q.pool.QueryRow(ctx, `SELECT retention_days FROM rm_users WHERE id = $1`, owner).Scan(&days)
	return days, err
}

// RetentionAccount is an account with a retention period.
type RetentionAccount struct {
	UserID string
	Days   int
}

// RetentionAccounts lists the accounts with a retention period: what the
// daily sweep visits.
func (q *Queries) RetentionAccounts(ctx context.Context) ([]RetentionAccount, error) {
	return pg.Append(ctx, q.pool, []RetentionAccount{}, func(r pgx.CollectableRow) (RetentionAccount, error) {
		var a RetentionAccount
		err := r.Scan(&a.UserID, &a.Days) // before a is read: a return's operands have no set order
		return a, err
	}, `SELECT id::text, retention_days FROM rm_users WHERE retention_days IS NOT NULL ORDER BY id`)
}

// CountExpiredTraces is how many of the account's traces had their last
// activity (latest revision: import, re-import or live spans) before
// cutoff: the retention dry-run.
func (q *Queries) CountExpiredTraces(ctx context.Context, owner string, cutoff time.Time) (int, error) {
	var n int
	err := q.pool.QueryRow(ctx, `SELECT count(*) FROM rm_traces WHERE owner_id = $1 AND updated_at < $2`, owner, cutoff).Scan(&n)
	return n, err
}

// ExpiredTrace is a trace retention nominates: its id, the revision whose
// time made it old, and that time (the page cursor).
type ExpiredTrace struct {
	ID        string
	Revision  int
	UpdatedAt time.Time
}

// ExpiredTraces nominates up to limit of the account's traces whose last
// activity was before cutoff, oldest first, after the cursor (nil: from the
// first), with the revision the read model saw: the command erases only
// while the stream is still at it.
func (q *Queries) ExpiredTraces(ctx context.Context, owner string, cutoff time.Time, after *ExpiredTrace, limit int) ([]ExpiredTrace, error) {
	var at time.Time
	var id string
	if after != nil {
		at, id = after.UpdatedAt, after.ID
	}
	return pg.Append(ctx, q.pool, []ExpiredTrace{}, func(r pgx.CollectableRow) (ExpiredTrace, error) {
		var t ExpiredTrace
		err := r.Scan(&t.ID, &t.Revision, &t.UpdatedAt)
		return t, err
	}, `SELECT id::text, revision, updated_at FROM rm_traces WHERE owner_id = $1 AND updated_at < $2
		AND ($3::text = '' OR (updated_at, id) > ($4, $3::uuid)) ORDER BY updated_at, id LIMIT $5`, owner, cutoff, id, at, limit)
}
