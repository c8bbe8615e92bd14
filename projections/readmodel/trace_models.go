package readmodel

import (
	"context"

	"github.com/criticml/critic/platform/pg"
	"github.com/jackc/pgx/v5"
)

// TraceModel is one entry of TraceDetail.reward_models: a reward model of
// the trace's owner whose selection included the trace (spec 001 "Trace
// messages": the trace view links to the model trained on it).
type TraceModel struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
}

// modelsOf fills d.RewardModels with the owner's models whose selected
// traces include d, newest first. The owner scope is the trace's, so
// another account's models never show.
func (q *Queries) modelsOf(ctx context.Context, owner string, d *TraceDetail) error {
	var err error
	d.RewardModels, err = pg.Append(ctx, q.pool, []TraceModel{}, func(r pgx.CollectableRow) (m TraceModel, err error) {
		err = r.Scan(&m.ID, &m.Name, &m.Status)
		return m, err
	}, `SELECT id, name, status FROM rm_reward_models
		WHERE owner_id = $1 AND $2::uuid = ANY(trace_ids) ORDER BY seq DESC`, owner, d.ID)
	return err
}
