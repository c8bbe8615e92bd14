package dispatch

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/projections/readmodel"
)

// retentionLockKey is the session advisory lock one API instance holds
// while it sweeps, so several instances do not erase the same traces side
// by side (each erasure is idempotent anyway: the second finds the trace
// gone).
const retentionLockKey = 7_210_037

// retentionBatch is how many traces of an account one read nominates.
const retentionBatch = 500

// RetentionQueries is what the retention sweep reads from the read model.
type RetentionQueries interface {
	RetentionAccounts(ctx context.Context) ([]readmodel.RetentionAccount, error)
	ExpiredTraces(ctx context.Context, owner string, cutoff time.Time, after *readmodel.ExpiredTrace, limit int) ([]readmodel.ExpiredTrace, error)
}

// Retention erases, per account with a retention period, the traces whose
// last activity is older than the period (issue 37). The read model
// nominates; commands.EraseExpiredTrace lets each trace's stream decide and
// erases it as a deletion would.
type Retention struct {
	q     RetentionQueries
	cmds  *commands.Commands
	pool  *pgxpool.Pool
	clock func() time.Time
	log   *slog.Logger
}

// NewRetention returns the sweep. clock is "now" for the cutoff (time.Now
// in the server; a fixed instant in tests); pool holds the advisory lock
// that elects one sweeping instance.
func NewRetention(q RetentionQueries, cmds *commands.Commands, pool *pgxpool.Pool, clock func() time.Time, log *slog.Logger) *Retention {
	return &Retention{q: q, cmds: cmds, pool: pool, clock: clock, log: log}
}

// Run sweeps once at start, then every interval, until ctx ends.
func (r *Retention) Run(ctx context.Context, interval time.Duration) error {
	for {
		if n, err := r.Sweep(ctx); err != nil {
			r.log.Warn("retention sweep", "err", err, "erased", n)
		} else if n > 0 {
			r.log.Info("retention sweep: erased traces older than their account's retention period", "erased", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// Sweep erases every account's expired traces once and says how many it
// erased. Another instance sweeping now (the lock is taken) makes it a
// no-op. An account that fails is logged and the others still swept.
func (r *Retention) Sweep(ctx context.Context) (int, error) {
	conn, err := r.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", retentionLockKey).Scan(&got); err != nil {
		return 0, err
	}
	if !got {
		return 0, nil
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", retentionLockKey)
	}()
	accounts, err := r.q.RetentionAccounts(ctx)
	if err != nil {
		return 0, err
	}
	now, total := r.clock(), 0
	for _, a := range accounts {
		n, err := EraseAccount(ctx, r.q, r.cmds, a.UserID, a.Days, now)
		total += n
		if err != nil {
			r.log.Warn("retention sweep: account", "user_id", a.UserID, "days", a.Days, "err", err)
		}
	}
	return total, ctx.Err()
}

// EraseAccount erases the account's traces older than days before now and
// says how many: the sweep's work for one account, and what `critic users
// retention` runs at once. A trace the command leaves alone (active again,
// deleted meanwhile) is not counted. The nominations are paged by last
// activity, so the read model catching up with the erasures meanwhile
// neither repeats nor skips one.
func EraseAccount(ctx context.Context, q RetentionQueries, cmds *commands.Commands, owner string, days int, now time.Time) (int, error) {
	cutoff := domain.RetentionCutoff(now, days)
	erased := 0
	var after *readmodel.ExpiredTrace
	for {
		batch, err := q.ExpiredTraces(ctx, owner, cutoff, after, retentionBatch)
		if err != nil {
			return erased, err
		}
		for _, t := range batch {
			res, err := cmds.EraseExpiredTrace.Handle(ctx, commands.EraseExpiredTrace{OwnerID: owner, TraceID: t.ID, Revision: t.Revision, Days: days})
			if err != nil {
				return erased, err
			}
			if res.LastEventID != "" {
				erased++
			}
		}
		if len(batch) < retentionBatch {
			return erased, nil
		}
		after = &batch[len(batch)-1]
	}
}
