package readmodel

import (
	"context"
	"time"

	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/pg"
	"github.com/jackc/pgx/v5"
)

// BackgroundModel is a model background scoring serves (spec 001 "Learned
// action credit"): succeeded, trained on action comparisons, not paused;
// ActiveBatches is how many of its automatic batches are queued or running.
type BackgroundModel struct {
	ID, OwnerID   string
	ActiveBatches int
}

// maxBackgroundModels bounds one tick's list of models.
const maxBackgroundModels = 1000

// BackgroundModels lists the models background scoring serves, oldest
// first. The models' streams decide; this only nominates.
func (q *Queries) BackgroundModels(ctx context.Context) ([]BackgroundModel, error) {
	return pg.Append(ctx, q.pool, nil, func(r pgx.CollectableRow) (m BackgroundModel, err error) {
		err = r.Scan(&m.ID, &m.OwnerID, &m.ActiveBatches)
		return m, err
	}, `SELECT m.id, m.owner_id,
			(SELECT count(DISTINCT r.batch_id) FROM rm_scoring_runs r
			 WHERE r.status IN ('queued', 'running') AND r.model_id = m.id AND r.automatic)
		FROM rm_reward_models m
		WHERE m.status = 'succeeded' AND NOT m.scoring_paused AND m.metrics->>'action_scoring_version' = '1'
		ORDER BY m.seq LIMIT $1`, maxBackgroundModels)
}

// BackgroundCursor is a position among an owner's traces in the order
// background scoring walks them: by last change, then id. The zero cursor
// is before every trace.
type BackgroundCursor struct {
	UpdatedAt time.Time
	TraceID   string
}

// Before reports whether c comes before o.
func (c BackgroundCursor) Before(o BackgroundCursor) bool {
	if !c.UpdatedAt.Equal(o.UpdatedAt) {
		return c.UpdatedAt.Before(o.UpdatedAt)
	}
	return c.TraceID < o.TraceID
}

// BackgroundCandidates nominates up to limit of the owner's traces the
// model should score in the background, oldest change first, at or after
// from: last changed before changedBefore (the idle debounce), with an
// assistant action, not scored by the model at their current revision (by
// training or a run), no run of the model active, fewer than
// rewardmodels.MaxAutomaticAttempts automatic failures at that revision,
// and not in skip (traces the command found nothing to score in). The
// traces' scoring streams decide.
//
// unsettled is the first trace at or after from that the model may still
// have to score — a candidate, or one whose run is queued or running (it
// can fail and be tried again) — or nil when every trace from there to
// changedBefore is settled. Every trace before it is settled until it
// changes (a change moves its updated_at forward), so the caller's next
// look can start there: it walks rm_traces_owner_updated from from, and an
// account whose traces are all scored costs a look at its newest ones, not
// at every trace (125 ms per look at 100,000 scored traces, every tick,
// for each ready model, before the cursor).
func (q *Queries) BackgroundCandidates(ctx context.Context, ownerID, modelID string, changedBefore time.Time, from BackgroundCursor, skip []string, limit int) (ids []string, unsettled *BackgroundCursor, err error) {
	if skip == nil {
		skip = []string{}
	}
	fromID := from.TraceID
	if fromID == "" {
		fromID = "00000000-0000-0000-0000-000000000000"
	}
	type row struct {
		id       string
		at       time.Time
		inFlight bool
	}
	// Runs in flight are at most two batches per model (automatic) and
	// what reviewers asked for: inFlightRoom leaves room for them.
	const inFlightRoom = 64
	rows, err := pg.Append(ctx, q.pool, nil, func(r pgx.CollectableRow) (x row, err error) {
		err = r.Scan(&x.id, &x.at, &x.inFlight)
		return x, err
	}, `SELECT t.id, t.updated_at, EXISTS (SELECT 1 FROM rm_scoring_runs r WHERE r.trace_id = t.id AND r.model_id = $3
		                                 AND r.status IN ('queued', 'running'))
		FROM rm_traces t
		WHERE t.owner_id = $1 AND t.updated_at <= $2 AND t.updated_at >= $7 AND (t.updated_at, t.id) >= ($7, $8::uuid)
		  AND t.id <> ALL($4::uuid[])
		  AND EXISTS (SELECT 1 FROM rm_steps s WHERE s.trace_id = t.id AND s.role = 'assistant'
		              AND (s.tool_name IS NOT NULL OR btrim(s.content) <> ''))
		  AND NOT EXISTS (SELECT 1 FROM rm_trace_scores ts WHERE ts.trace_id = t.id AND ts.model_id = $3 AND ts.revision = t.revision)
		  AND NOT EXISTS (SELECT 1 FROM rm_scoring_runs r WHERE r.trace_id = t.id AND r.model_id = $3
		                  AND r.status = 'succeeded' AND r.revision = t.revision)
		  AND (SELECT count(*) FROM rm_scoring_runs r WHERE r.trace_id = t.id AND r.model_id = $3 AND r.revision = t.revision
		       AND r.automatic AND r.status = 'failed') < $5
		ORDER BY t.updated_at, t.id LIMIT $6`, ownerID, changedBefore, modelID, skip, rewardmodels.MaxAutomaticAttempts, limit+inFlightRoom, from.UpdatedAt, fromID)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range rows {
		if unsettled == nil {
			unsettled = &BackgroundCursor{UpdatedAt: r.at, TraceID: r.id}
		}
		if !r.inFlight && len(ids) < limit {
			ids = append(ids, r.id)
		}
	}
	return ids, unsettled, nil
}

// BackgroundScoring is a model's background scoring as its page shows it
// (GET /reward-models/{id}): whether it is paused, and its traces by state
// — scored at their current revision, queued, running, and failed (a
// revision that used up its automatic attempts and has no score).
type BackgroundScoring struct {
	Paused  bool `json:"paused"`
	Scored  int  `json:"scored"`
	Queued  int  `json:"queued"`
	Running int  `json:"running"`
	Failed  int  `json:"failed"`
}

// BackgroundScoringOf counts one of the owner's models' traces by state.
func (q *Queries) BackgroundScoringOf(ctx context.Context, ownerID, modelID string) (BackgroundScoring, error) {
	var b BackgroundScoring
	err := q.pool.QueryRow(ctx, `SELECT m.scoring_paused,
		(SELECT count(*) FROM rm_trace_scores s JOIN rm_traces t ON t.id = s.trace_id AND t.revision = s.revision
		 WHERE s.model_id = m.id AND s.owner_id = m.owner_id),
		(SELECT count(DISTINCT r.trace_id) FROM rm_scoring_runs r WHERE r.status = 'queued' AND r.model_id = m.id),
		(SELECT count(DISTINCT r.trace_id) FROM rm_scoring_runs r WHERE r.status = 'running' AND r.model_id = m.id),
		(SELECT count(*) FROM (SELECT r.trace_id FROM rm_scoring_runs r JOIN rm_traces t ON t.id = r.trace_id AND t.revision = r.revision
		  WHERE r.model_id = m.id AND r.owner_id = m.owner_id AND r.automatic AND r.status = 'failed'
		    AND NOT EXISTS (SELECT 1 FROM rm_trace_scores s WHERE s.trace_id = t.id AND s.model_id = m.id AND s.revision = t.revision)
		    AND NOT EXISTS (SELECT 1 FROM rm_scoring_runs a WHERE a.trace_id = t.id AND a.model_id = m.id AND a.status IN ('queued', 'running', 'succeeded')
		                    AND a.revision = t.revision)
		  GROUP BY r.trace_id HAVING count(*) >= $3) f)
		FROM rm_reward_models m WHERE m.id = $1 AND m.owner_id = $2`, modelID, ownerID, rewardmodels.MaxAutomaticAttempts).
		Scan(&b.Paused, &b.Scored, &b.Queued, &b.Running, &b.Failed)
	return b, err
}
