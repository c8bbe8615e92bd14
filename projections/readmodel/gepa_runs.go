package readmodel

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/pg"
)

// gepaAppliers project gepa_run.* events into rm_gepa_runs.
var gepaAppliers = map[string]applier{
	events.GepaRunRequested: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.GepaRunRequestedV1) error {
		return exec(ctx, tx, `INSERT INTO rm_gepa_runs (id, owner_id, model_id, status, task_model, task_api_base, reflection_model, max_metric_calls,
			examples, created_at, seq) VALUES ($1, $2, $3, 'queued', $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING`,
			p.RunID, e.OwnerID, p.ModelID, p.TaskModel, p.TaskAPIBase, p.ReflectionModel, p.MaxMetricCalls, p.Examples, e.RecordedAt, e.Seq)
	}),
	events.GepaRunStarted: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.GepaRunStartedV1) error {
		return exec(ctx, tx, `UPDATE rm_gepa_runs SET status = 'running', worker_id = $2, lease_seconds = $3, last_beat = $4, started_at = $4 WHERE id = $1`,
			p.RunID, p.WorkerID, p.LeaseSeconds, e.RecordedAt)
	}),
	events.GepaRunHeartbeat: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.GepaRunHeartbeatV1) error {
		return exec(ctx, tx, `UPDATE rm_gepa_runs SET last_beat = $2, progress = $3 WHERE id = $1`, p.RunID, e.RecordedAt, jsonOrNil(p.Progress))
	}),
	events.GepaRunCandidateEvaluated: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.GepaRunCandidateEvaluatedV1) error {
		return exec(ctx, tx, `UPDATE rm_gepa_runs SET last_beat = $2, progress = $3 WHERE id = $1`, p.RunID, e.RecordedAt, jsonOrNil(p.Progress))
	}),
	events.GepaRunRequeued: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.GepaRunRequeuedV1) error {
		return exec(ctx, tx, `UPDATE rm_gepa_runs SET status = 'queued', worker_id = NULL, last_beat = NULL, started_at = NULL, progress = NULL WHERE id = $1`, p.RunID)
	}),
	events.GepaRunSucceeded: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.GepaRunSucceededV1) error {
		return exec(ctx, tx, `UPDATE rm_gepa_runs SET status = 'succeeded', result = $2, finished_at = $3 WHERE id = $1`, p.RunID, jsonOrNil(p.Result), e.RecordedAt)
	}),
	events.GepaRunFailed: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.GepaRunFailedV1) error {
		return exec(ctx, tx, `UPDATE rm_gepa_runs SET status = 'failed', error = $2, finished_at = $3 WHERE id = $1`, p.RunID, p.Error, e.RecordedAt)
	}),
}

// GepaCandidate is one entry of GepaRun.candidates: a full SKILL.md and its score.
type GepaCandidate struct {
	Skill string  `json:"skill"`
	Score float64 `json:"score"`
}

// GepaHoldout is the held-out check (null with fewer than 8 examples).
type GepaHoldout struct {
	Examples  int     `json:"examples"`
	SeedScore float64 `json:"seed_score"`
	BestScore float64 `json:"best_score"`
}

// GepaRun is the GepaRun shape (spec 001): the run's status and request,
// its progress while running, and the result fields (null until it
// succeeds).
type GepaRun struct {
	ID              string               `json:"id"`
	RewardModelID   string               `json:"reward_model_id"`
	Status          string               `json:"status"`
	TaskModel       string               `json:"task_model"`
	TaskAPIBase     *string              `json:"task_api_base"`
	ReflectionModel string               `json:"reflection_model"`
	MaxMetricCalls  int                  `json:"max_metric_calls"`
	Examples        int                  `json:"examples"`
	Progress        *events.GepaProgress `json:"progress"`
	GepaResult
	Error      *string    `json:"error"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// GepaResult is what a finished run reported (its result), in the run's
// JSON at the place of these fields.
type GepaResult struct {
	SkillName        *string         `json:"skill_name"`
	SkillDescription *string         `json:"skill_description"`
	BestSkill        *string         `json:"best_skill"`
	BestScore        *float64        `json:"best_score"`
	SeedSkill        *string         `json:"seed_skill"`
	SeedScore        *float64        `json:"seed_score"`
	Candidates       []GepaCandidate `json:"candidates"`
	Holdout          *GepaHoldout    `json:"holdout"`
	MetricCalls      *int            `json:"metric_calls"`
}

const gepaCols = `id, model_id, status, task_model, task_api_base, reflection_model, max_metric_calls, examples, progress, result, error,
	created_at, started_at, finished_at`

func scanGepa(row pgx.Row) (GepaRun, error) {
	var r GepaRun
	var progress, result []byte
	if err := row.Scan(&r.ID, &r.RewardModelID, &r.Status, &r.TaskModel, &r.TaskAPIBase, &r.ReflectionModel, &r.MaxMetricCalls, &r.Examples,
		&progress, &result, &r.Error, &r.CreatedAt, &r.StartedAt, &r.FinishedAt); err != nil {
		return r, err
	}
	r.CreatedAt = r.CreatedAt.UTC()
	if len(progress) > 0 && r.Status == "running" {
		var p events.GepaProgress
		if json.Unmarshal(progress, &p) == nil {
			r.Progress = &p
		}
	}
	if len(result) > 0 {
		if err := json.Unmarshal(result, &r.GepaResult); err != nil {
			return r, err
		}
	}
	return r, nil
}

// GetGepaRun returns one of the owner's GEPA runs.
func (q *Queries) GetGepaRun(ctx context.Context, owner, id string) (*GepaRun, error) {
	if !validUUID(id) {
		return nil, domain.NotFound("GEPA run", id)
	}
	r, err := scanGepa(q.pool.QueryRow(ctx, `SELECT `+gepaCols+` FROM rm_gepa_runs WHERE id = $1 AND owner_id = $2`, id, owner))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, domain.NotFound("GEPA run", id)
	}
	return &r, err
}

// ListGepaRuns returns the owner's GEPA runs, newest first.
func (q *Queries) ListGepaRuns(ctx context.Context, owner string) ([]GepaRun, error) {
	return pg.Append(ctx, q.pool, []GepaRun{}, func(r pgx.CollectableRow) (GepaRun, error) { return scanGepa(r) },
		`SELECT `+gepaCols+` FROM rm_gepa_runs WHERE owner_id = $1 ORDER BY seq DESC`, owner)
}

// ExpiredGepaLeases lists running GEPA runs whose last heartbeat is older
// than their lease at now (nominees: the run's stream decides).
func (q *Queries) ExpiredGepaLeases(ctx context.Context, now time.Time) ([]string, error) {
	return pg.Append(ctx, q.pool, nil, pgx.RowTo[string], `SELECT id FROM rm_gepa_runs WHERE status = 'running'
		AND last_beat + make_interval(secs => lease_seconds) < $1`, now)
}
