package readmodel

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// modelAppliers project reward-model, score and scoring-run events.
var modelAppliers = map[string]applier{
	events.RewardModelRequested: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelRequestedV1) error {
		return exec(ctx, tx, `INSERT INTO rm_reward_models (id, owner_id, name, base_model, compute, epochs, max_pairs, trace_ids, status, attempt, created_at, seq,
			training_config) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'queued', 1, $9, $10, $11) ON CONFLICT (id) DO NOTHING`,
			p.ModelID, e.OwnerID, p.Name, p.BaseModel, p.Compute, p.Epochs, p.MaxPairs, p.TraceIDs, e.RecordedAt, e.Seq,
			jsonOrNil(rewardmodels.ConfigOf(p)))
	}),
	events.RewardModelDatasetBuilt: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelDatasetBuiltV1) error {
		var agreed any // NULL for a dataset built before agreement was recorded
		if p.Agreement != nil {
			agreed = jsonOrNil(p.Agreement)
		}
		return exec(ctx, tx, `UPDATE rm_reward_models SET num_pairs = $2, dataset_key = $3, agreement = $4 WHERE id = $1`, p.ModelID, p.NumPairs, p.DatasetKey,
			agreed)
	}),
	events.RewardModelTrainingStarted: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelTrainingStartedV1) error {
		return exec(ctx, tx, `UPDATE rm_reward_models SET status = 'running', worker_id = $2, lease_seconds = $3, last_beat = $4, started_at = $4,
			progress = NULL, compute = COALESCE(NULLIF($5, ''), compute) WHERE id = $1`, p.ModelID, p.WorkerID, p.LeaseSeconds, e.RecordedAt, p.Compute)
	}),
	events.RewardModelTrainingRequeued: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelTrainingRequeuedV1) error {
		return exec(ctx, tx, `UPDATE rm_reward_models SET status = 'queued', worker_id = NULL, started_at = NULL, last_beat = NULL, progress = NULL
			WHERE id = $1`, p.ModelID)
	}),
	events.RewardModelHeartbeat: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelHeartbeatV1) error {
		return exec(ctx, tx, `UPDATE rm_reward_models SET last_beat = $2, progress = $3 WHERE id = $1`, p.ModelID, e.RecordedAt, jsonOrNil(p.Progress))
	}),
	events.RewardModelTrainingSucceeded: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelTrainingSucceededV1) error {
		return exec(ctx, tx, `UPDATE rm_reward_models SET status = 'succeeded', metrics = $2, artifact_key = $3, num_pairs = $4, finished_at = $5,
			progress = NULL, reward_stats = $6, action_reward_stats = $7 WHERE id = $1`, p.ModelID, jsonOrNil(p.Metrics), p.ArtifactKey, p.NumPairs, e.RecordedAt,
			statsOrNil(p.RewardStats), statsOrNil(p.ActionRewardStats))
	}),
	events.RewardModelTrainingFailed: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelTrainingFailedV1) error {
		return exec(ctx, tx, `UPDATE rm_reward_models SET status = 'failed', error = $2, finished_at = $3 WHERE id = $1`, p.ModelID, p.Error, e.RecordedAt)
	}),
	events.RewardModelRetried: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelRetriedV1) error {
		return exec(ctx, tx, `UPDATE rm_reward_models SET status = 'queued', attempt = $2, error = NULL, metrics = NULL, progress = NULL,
			num_pairs = NULL, dataset_key = NULL, agreement = NULL, worker_id = NULL, started_at = NULL, finished_at = NULL, reward_stats = NULL,
			action_reward_stats = NULL WHERE id = $1`, p.ModelID, p.Attempt)
	}),
	events.RewardModelScoringPaused: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelScoringPausedV1) error {
		return exec(ctx, tx, `UPDATE rm_reward_models SET scoring_paused = true WHERE id = $1`, p.ModelID)
	}),
	events.RewardModelScoringResumed: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.RewardModelScoringPausedV1) error {
		return exec(ctx, tx, `UPDATE rm_reward_models SET scoring_paused = false WHERE id = $1`, p.ModelID)
	}),
	events.TracesScored: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TracesScoredV1) error {
		ids, revs, scores := make([]string, len(p.Scores)), make([]int32, len(p.Scores)), make([]float64, len(p.Scores))
		for i, s := range p.Scores {
			ids[i], revs[i], scores[i] = s.TraceID, int32(s.Revision), s.Score
		}
		// Only scores of the trace's current revision land: a stale one
		// (re-imported while training) is ignored.
		return exec(ctx, tx, `INSERT INTO rm_trace_scores (trace_id, model_id, owner_id, model_name, revision, score, created_at)
			SELECT s.trace_id, $1, t.owner_id, $2, s.rev, s.score, $3
			FROM unnest($4::uuid[], $5::int[], $6::float8[]) AS s(trace_id, rev, score)
			JOIN rm_traces t ON t.id = s.trace_id AND t.revision = s.rev AND t.owner_id = $7
			ON CONFLICT (trace_id, model_id) DO UPDATE SET score = EXCLUDED.score, revision = EXCLUDED.revision,
				model_name = EXCLUDED.model_name, created_at = EXCLUDED.created_at`,
			p.ModelID, p.ModelName, e.RecordedAt, ids, revs, scores, e.OwnerID)
	}),
	events.ActionsScored: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.ActionsScoredV1) error {
		n := len(p.Scores)
		steps, traces, revs, scores, credits := make([]string, n), make([]string, n), make([]int32, n), make([]float64, n), make([]float64, n)
		for i, s := range p.Scores {
			steps[i], traces[i], revs[i], scores[i], credits[i] = s.StepID, s.TraceID, int32(s.Revision), s.Score, s.Credit
		}
		return exec(ctx, tx, `INSERT INTO rm_action_scores (step_id, model_id, trace_id, owner_id, model_name, revision, score, credit, created_at)
			SELECT s.step_id, $1, s.trace_id, t.owner_id, $2, s.rev, s.score, s.credit, $3
			FROM unnest($4::uuid[], $5::uuid[], $6::int[], $7::float8[], $8::float8[]) AS s(step_id, trace_id, rev, score, credit)
			JOIN rm_traces t ON t.id = s.trace_id AND t.revision = s.rev AND t.owner_id = $9
			JOIN rm_steps st ON st.id = s.step_id AND st.trace_id = s.trace_id
			ON CONFLICT (step_id, model_id) DO UPDATE SET score = EXCLUDED.score, credit = EXCLUDED.credit, revision = EXCLUDED.revision,
				model_name = EXCLUDED.model_name, created_at = EXCLUDED.created_at`,
			p.ModelID, p.ModelName, e.RecordedAt, steps, traces, revs, scores, credits, e.OwnerID)
	}),
	events.ScoringRunRequested: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.ScoringRunRequestedV1) error {
		// A new run while one is queued supersedes it (an explicit request
		// over a queued automatic run): the old run never starts, so it
		// ends here, and is no automatic attempt (nor does its batch stay
		// active).
		if err := exec(ctx, tx, `UPDATE rm_scoring_runs SET status = 'failed', automatic = false, finished_at = $4,
			error = 'superseded by an explicit request to score this trace' WHERE trace_id = $1 AND model_id = $2 AND status = 'queued' AND id <> $3`,
			p.TraceID, p.ModelID, p.RunID, e.RecordedAt); err != nil {
			return err
		}
		return exec(ctx, tx, `INSERT INTO rm_scoring_runs (id, trace_id, model_id, owner_id, status, created_at, seq, revision, automatic, batch_id)
			VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $8, NULLIF($9, '')::uuid)
			ON CONFLICT (id) DO NOTHING`, p.RunID, p.TraceID, p.ModelID, e.OwnerID, e.RecordedAt, e.Seq, p.TraceRevision, p.Automatic, p.BatchID)
	}),
	events.ScoringRunStarted: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.ScoringRunStartedV1) error {
		return exec(ctx, tx, `UPDATE rm_scoring_runs SET status = 'running', started_at = $2 WHERE id = $1`, p.RunID, e.RecordedAt)
	}),
	events.ScoringRunRequeued: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.ScoringRunRequeuedV1) error {
		return exec(ctx, tx, `UPDATE rm_scoring_runs SET status = 'queued', started_at = NULL WHERE id = $1`, p.RunID)
	}),
	events.ScoringRunSucceeded: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.ScoringRunSucceededV1) error {
		return exec(ctx, tx, `UPDATE rm_scoring_runs SET status = 'succeeded', finished_at = $2 WHERE id = $1`, p.RunID, e.RecordedAt)
	}),
	events.ScoringRunFailed: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.ScoringRunFailedV1) error {
		return exec(ctx, tx, `UPDATE rm_scoring_runs SET status = 'failed', error = $2, finished_at = $3 WHERE id = $1`, p.RunID, p.Error, e.RecordedAt)
	}),
}

// statsOrNil is a model's reward statistics as the read model stores them:
// the fields clients calibrate with, or NULL when the worker reported none
// (or something unreadable, which must not stop the projection).
func statsOrNil(raw json.RawMessage) any {
	s := rewardmodels.ParseRewardStats(raw)
	if s == nil {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	return string(b)
}
