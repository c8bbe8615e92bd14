package readmodel

import (
	"context"

	"github.com/criticml/critic/platform/pg"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Lag counts the events among the newest window of the log that this read
// model has not applied yet: what /readyz and critic_readmodel_lag_events
// report. Looking only at the newest events keeps it a bounded number of
// primary-key probes however long the log is; a result equal to window means
// "at least window behind". It reads the database, so it answers for the read
// model every API instance queries, wherever its projection runs.
func Lag(ctx context.Context, pool *pgxpool.Pool, window int64) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT id FROM events ORDER BY seq DESC LIMIT $1) e
		WHERE NOT EXISTS (SELECT 1 FROM readmodel_applied a WHERE a.event_id = e.id)`, window).Scan(&n)
	return n, err
}

// JobCount is how many jobs of a kind are in a status.
type JobCount struct {
	Kind   string // "train", "score" or "gepa"
	Status string // "queued" or "running"
	N      int64
}

// UnfinishedJobs counts the queued and running training jobs, scoring
// runs and GEPA runs: the job queue's depth (partial indexes of migration 00023 keep it
// cheap).
func UnfinishedJobs(ctx context.Context, pool *pgxpool.Pool) ([]JobCount, error) {
	// Both statuses of both kinds are always reported, zero included, so a
	// drained queue reads 0 rather than vanishing from the dashboard.
	out := []JobCount{{"train", "queued", 0}, {"train", "running", 0}, {"score", "queued", 0}, {"score", "running", 0},
		{"gepa", "queued", 0}, {"gepa", "running", 0}}
	var c JobCount
	err := pg.Each(ctx, pool, []any{&c.Kind, &c.Status, &c.N}, func() error {
		for i := range out {
			if out[i].Kind == c.Kind && out[i].Status == c.Status {
				out[i].N = c.N
			}
		}
		return nil
	}, `
		SELECT 'train', status, count(*) FROM rm_reward_models WHERE status IN ('queued', 'running') GROUP BY status
		UNION ALL
		SELECT 'score', status, count(*) FROM rm_scoring_runs WHERE status IN ('queued', 'running') GROUP BY status
		UNION ALL
		SELECT 'gepa', status, count(*) FROM rm_gepa_runs WHERE status IN ('queued', 'running') GROUP BY status`)
	return out, err
}
