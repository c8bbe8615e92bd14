package readmodel

import "context"

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
	rows, err := q.pool.Query(ctx, `SELECT id, name, status FROM rm_reward_models
		WHERE owner_id = $1 AND $2::uuid = ANY(trace_ids) ORDER BY seq DESC`, owner, d.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	d.RewardModels = []TraceModel{}
	for rows.Next() {
		var m TraceModel
		if err := rows.Scan(&m.ID, &m.Name, &m.Status); err != nil {
			return err
		}
		d.RewardModels = append(d.RewardModels, m)
	}
	return rows.Err()
}
