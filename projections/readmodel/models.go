package readmodel

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/agreement"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/platform/pg"
)

// RewardModel is the RewardModel shape of spec 001, plus `progress` while it
// runs.
type RewardModel struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	BaseModel string `json:"base_model"`
	Compute   string `json:"compute"`
	// WorkerID is the worker that runs (or ran) the current attempt: the
	// CRITIC_WORKER_ID of a `critic worker`, "local" for the in-process
	// worker; null while queued.
	WorkerID   *string         `json:"worker_id"`
	Epochs     int             `json:"epochs"`
	MaxPairs   int             `json:"max_pairs"`
	TraceCount int             `json:"trace_count"`
	Status     string          `json:"status"`
	NumPairs   *int            `json:"num_pairs"`
	Metrics    json.RawMessage `json:"metrics"`
	Error      *string         `json:"error"`
	Progress   json.RawMessage `json:"progress"`
	CreatedAt  time.Time       `json:"created_at"`
	StartedAt  *time.Time      `json:"started_at"`
	FinishedAt *time.Time      `json:"finished_at"`
	// RewardStats are reward_stats.json of a succeeded model: the mean and
	// std of its rewards over the training texts, with which a trace score
	// s calibrates to sigmoid((s − mean) / std) (spec 004). Null until it
	// succeeds.
	RewardStats *rewardmodels.RewardStats `json:"reward_stats"`
	// ActionRewardStats are action_reward_stats.json, which action credit
	// tanh((s − mean) / (2·std)) uses; null for a model not trained on
	// action comparisons.
	ActionRewardStats *rewardmodels.RewardStats `json:"action_reward_stats"`
	// TrainingConfig is what the model learns from, as requested.
	TrainingConfig ModelTrainingConfig `json:"training_config"`
}

// ModelTrainingConfig is a model's training_config as GET /reward-models
// shows it: the supervision it learns from, and the criterion (id and
// name when requested) when it learns from a criterion's values instead
// of ratings.
type ModelTrainingConfig struct {
	AnnotationSource string  `json:"annotation_source"`
	InputVersion     int     `json:"input_version"`
	Criterion        *string `json:"criterion"`
	CriterionName    *string `json:"criterion_name"`
	// ExcludeDisputed: disputed, unadjudicated targets were left out.
	ExcludeDisputed bool `json:"exclude_disputed"`
}

// modelTrainingConfig reads the stored training_config (the request's,
// defaults applied).
func modelTrainingConfig(raw []byte) (ModelTrainingConfig, error) {
	cfg := events.TrainingConfig{AnnotationSource: events.SourceFeedback, InputVersion: 1}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return ModelTrainingConfig{}, err
		}
	}
	return trainingConfigView(cfg), nil
}

// trainingConfigView is what a model shows of its training config.
func trainingConfigView(cfg events.TrainingConfig) ModelTrainingConfig {
	out := ModelTrainingConfig{AnnotationSource: cfg.AnnotationSource, InputVersion: cfg.InputVersion, ExcludeDisputed: cfg.ExcludeDisputed}
	if cfg.Criterion != "" {
		out.Criterion, out.CriterionName = new(cfg.Criterion), new(cfg.CriterionName)
	}
	return out
}

// RewardModelDetail is GET /reward-models/{id}: spec 001's
// RewardModelDetail (feedback null until extraction is recorded, [] when it
// found nothing to learn from), plus feedback_unavailable (why feedback is
// not extracted and which variable to set) and llm_usage per model.
type RewardModelDetail struct {
	RewardModel
	TraceIDs            []string        `json:"trace_ids"`
	Feedback            json.RawMessage `json:"feedback"`
	FeedbackUnavailable *string         `json:"feedback_unavailable"`
	LLMUsage            []LLMUsage      `json:"llm_usage"`
	// BackgroundScoring is the model's background scoring (spec 001
	// "Learned action credit"): paused or not, and its traces by state.
	BackgroundScoring BackgroundScoring `json:"background_scoring"`
	// ErasedTraces counts the traces it was trained on that were erased
	// since (issue 37); ErasedNotice says so (null when none): the model
	// keeps scoring, its weights cannot unlearn them.
	ErasedTraces int     `json:"erased_traces"`
	ErasedNotice *string `json:"erased_notice"`
	// Agreement is the learning report's agreement (issue 36): how much of
	// the training data the members disputed, adjudicated or left out, and
	// their alpha; null until the dataset is built (and for datasets built
	// before it was recorded).
	Agreement *ModelAgreement `json:"agreement"`
}

// ModelAgreement is events.DatasetAgreement as a model shows it, with each
// member's agreement with the model once it has scores.
type ModelAgreement struct {
	events.DatasetAgreement
	// Members are each member's agreement with this model's scores (the
	// Team page's agreement with a chosen model); [] until it succeeded.
	Members []ModelMemberAgreement `json:"members"`
}

// ModelMemberAgreement is one member's agreement with a model.
type ModelMemberAgreement struct {
	Member string `json:"member"`
	Name   string `json:"name"`
	// Judged is how many targets the member judged.
	Judged int `json:"judged"`
	// Model is the share of the member's judgments whose sign the model's
	// score has, with its count and too_few.
	Model agreement.Figure `json:"model"`
}

const modelCols = `m.id, m.name, m.base_model, m.compute, m.epochs, m.max_pairs, cardinality(m.trace_ids), m.status, m.num_pairs,
	m.metrics, m.error, m.progress, m.created_at, m.started_at, m.finished_at, m.reward_stats, m.action_reward_stats, m.worker_id, m.training_config`

func scanModel(row pgx.Row, m *RewardModel, extra ...any) error {
	var metrics, progress, cfg []byte
	if err := row.Scan(append([]any{&m.ID, &m.Name, &m.BaseModel, &m.Compute, &m.Epochs, &m.MaxPairs, &m.TraceCount, &m.Status, &m.NumPairs,
		&metrics, &m.Error, &progress, &m.CreatedAt, &m.StartedAt, &m.FinishedAt, &m.RewardStats, &m.ActionRewardStats, &m.WorkerID, &cfg}, extra...)...); err != nil {
		return err
	}
	var err error
	if m.TrainingConfig, err = modelTrainingConfig(cfg); err != nil {
		return err
	}
	m.Metrics, m.Progress = rawOrNull(metrics), rawOrNull(progress)
	m.CreatedAt = m.CreatedAt.UTC()
	for _, t := range []*time.Time{m.StartedAt, m.FinishedAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return nil
}

// ListRewardModels returns the owner's models, newest first.
func (q *Queries) ListRewardModels(ctx context.Context, owner string) ([]RewardModel, error) {
	return pg.Append(ctx, q.pool, []RewardModel{}, func(r pgx.CollectableRow) (m RewardModel, err error) {
		err = scanModel(r, &m)
		return m, err
	}, `SELECT `+modelCols+` FROM rm_reward_models m WHERE m.owner_id = $1 ORDER BY m.seq DESC`, owner)
}

// ErasedTracesOf counts the traces model id was trained on that are gone
// from the read model: deleted, which erases them (issue 37).
func (q *Queries) ErasedTracesOf(ctx context.Context, id string) (int, error) {
	var n int
	err := q.pool.QueryRow(ctx, `SELECT count(*) FROM rm_reward_models m, unnest(m.trace_ids) t(id)
		WHERE m.id = $1 AND NOT EXISTS (SELECT 1 FROM rm_traces r WHERE r.id = t.id)`, id).Scan(&n)
	return n, err
}

// RewardModel returns one of the owner's models as the list shows it: one
// row, without the detail's trace ids, agreement, feedback and background
// scoring, so a write that only answers the model reads nothing else.
func (q *Queries) RewardModel(ctx context.Context, owner, id string) (RewardModel, error) {
	var m RewardModel
	if !validUUID(id) {
		return m, domain.NotFound("reward model", id)
	}
	err := scanModel(q.pool.QueryRow(ctx, `SELECT `+modelCols+` FROM rm_reward_models m WHERE m.id = $1 AND m.owner_id = $2`, id, owner), &m)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, domain.NotFound("reward model", id)
	}
	return m, err
}

// GetRewardModel returns one of the owner's models.
func (q *Queries) GetRewardModel(ctx context.Context, owner, id string) (*RewardModelDetail, error) {
	if !validUUID(id) {
		return nil, domain.NotFound("reward model", id)
	}
	d := &RewardModelDetail{Feedback: json.RawMessage("null")}
	var agreedRaw []byte
	err := scanModel(q.pool.QueryRow(ctx, `SELECT `+modelCols+`, m.trace_ids::text[], m.agreement FROM rm_reward_models m WHERE m.id = $1 AND m.owner_id = $2`, id, owner),
		&d.RewardModel, &d.TraceIDs, &agreedRaw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, domain.NotFound("reward model", id)
	}
	if err != nil {
		return nil, err
	}
	if len(agreedRaw) > 0 {
		d.Agreement = &ModelAgreement{Members: []ModelMemberAgreement{}}
		if err := json.Unmarshal(agreedRaw, &d.Agreement.DatasetAgreement); err != nil {
			return nil, err
		}
	}
	if d.BackgroundScoring, err = q.BackgroundScoringOf(ctx, owner, id); err != nil {
		return nil, err
	}
	if d.ErasedTraces, err = q.ErasedTracesOf(ctx, id); err != nil {
		return nil, err
	}
	if n := traces.ErasedNotice(d.ErasedTraces); n != "" {
		d.ErasedNotice = &n
	}
	return d, q.feedbackOf(ctx, d)
}

// ArtifactKey returns the checkpoint of an owner's succeeded model; any other
// model is not found (spec: 404 until succeeded).
func (q *Queries) ArtifactKey(ctx context.Context, owner, id string) (string, error) {
	if !validUUID(id) {
		return "", domain.NotFound("reward model", id)
	}
	var key *string
	err := q.pool.QueryRow(ctx, `SELECT artifact_key FROM rm_reward_models WHERE id = $1 AND owner_id = $2 AND status = 'succeeded'`, id, owner).Scan(&key)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && key == nil) {
		return "", domain.NotFound("reward model weights", id)
	}
	return *key, err
}

// DatasetKey is where one of the owner's models keeps the training dataset
// of its current attempt; a model without one (not built yet, or being
// rebuilt after a retry) is a conflict naming its status.
func (q *Queries) DatasetKey(ctx context.Context, owner, id string) (string, error) {
	if !validUUID(id) {
		return "", domain.NotFound("reward model", id)
	}
	var key *string
	var status string
	err := q.pool.QueryRow(ctx, `SELECT dataset_key, status FROM rm_reward_models WHERE id = $1 AND owner_id = $2`, id, owner).Scan(&key, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", domain.NotFound("reward model", id)
	}
	if err != nil {
		return "", err
	}
	if key == nil {
		return "", &domain.ConflictError{Code: "no_dataset", Message: "reward model " + id + " has no training dataset yet (status " + status + "); its pairs exist once the dataset is built"}
	}
	return *key, nil
}

// DBNow is the database's clock: the clock every event's recorded_at (and
// so every heartbeat and start time) was read from. Lease and timeout
// decisions compare against it, never against the host's clock, which may
// be skewed on any of several API hosts.
func (q *Queries) DBNow(ctx context.Context) (time.Time, error) {
	var now time.Time
	err := q.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now)
	return now.UTC(), err
}

// ExpiredLeases lists running models whose last heartbeat is older than their
// lease at now; the sweeper confirms each on the model's stream.
func (q *Queries) ExpiredLeases(ctx context.Context, now time.Time) ([]string, error) {
	return pg.Append(ctx, q.pool, nil, pgx.RowTo[string], `SELECT id FROM rm_reward_models WHERE status = 'running'
		AND last_beat + make_interval(secs => lease_seconds) < $1`, now)
}

// ClaimableTraining lists up to limit queued models whose dataset is built,
// oldest request first: the candidates a free worker's claim tries, in
// order. The model's stream decides each claim; this only nominates, so a
// lagging read model costs a refused candidate, never a double start.
func (q *Queries) ClaimableTraining(ctx context.Context, limit int) ([]rewardmodels.TrainingCandidate, error) {
	return pg.Append(ctx, q.pool, nil, func(r pgx.CollectableRow) (c rewardmodels.TrainingCandidate, err error) {
		err = r.Scan(&c.ModelID, &c.Attempt)
		return c, err
	}, `SELECT id::text, attempt FROM rm_reward_models
		WHERE status = 'queued' AND dataset_key IS NOT NULL ORDER BY seq LIMIT $1`, limit)
}

// ScoringRun is the ScoringRun shape of spec 001.
type ScoringRun struct {
	ID            string     `json:"id"`
	TraceID       string     `json:"trace_id"`
	RewardModelID string     `json:"reward_model_id"`
	Status        string     `json:"status"`
	Error         *string    `json:"error"`
	CreatedAt     time.Time  `json:"created_at"`
	StartedAt     *time.Time `json:"started_at"`
	FinishedAt    *time.Time `json:"finished_at"`
}

const runCols = `r.id, r.trace_id, r.model_id, r.status, r.error, r.created_at, r.started_at, r.finished_at`

func scanRun(row pgx.Row) (ScoringRun, error) {
	var r ScoringRun
	err := row.Scan(&r.ID, &r.TraceID, &r.RewardModelID, &r.Status, &r.Error, &r.CreatedAt, &r.StartedAt, &r.FinishedAt)
	r.CreatedAt = r.CreatedAt.UTC()
	return r, err
}

// GetScoringRun returns one of the owner's scoring runs.
func (q *Queries) GetScoringRun(ctx context.Context, owner, id string) (*ScoringRun, error) {
	r, err := scanRun(q.pool.QueryRow(ctx, `SELECT `+runCols+` FROM rm_scoring_runs r WHERE r.id = $1 AND r.owner_id = $2`, id, owner))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, domain.NotFound("scoring run", id)
	}
	return &r, err
}

// TraceScore is an entry of TraceDetail.scores (latest per model).
type TraceScore struct {
	RewardModelID   string    `json:"reward_model_id"`
	RewardModelName string    `json:"reward_model_name"`
	Score           float64   `json:"score"`
	CreatedAt       time.Time `json:"created_at"`
}

// ActionScore is an entry of TraceDetail.action_scores.
type ActionScore struct {
	RewardModelID   string    `json:"reward_model_id"`
	RewardModelName string    `json:"reward_model_name"`
	StepID          string    `json:"step_id"`
	Score           float64   `json:"score"`
	Credit          float64   `json:"credit"`
	CreatedAt       time.Time `json:"created_at"`
}

// scoresOf fills a detail's scores, action scores and latest runs per model.
func (q *Queries) scoresOf(ctx context.Context, d *TraceDetail) (err error) {
	d.Scores, err = pg.Append(ctx, q.pool, d.Scores, func(r pgx.CollectableRow) (s TraceScore, err error) {
		err = r.Scan(&s.RewardModelID, &s.RewardModelName, &s.Score, &s.CreatedAt)
		s.CreatedAt = s.CreatedAt.UTC()
		return s, err
	}, `SELECT model_id, model_name, score, created_at FROM rm_trace_scores WHERE trace_id = $1 ORDER BY created_at DESC, model_id`, d.ID)
	if err != nil {
		return err
	}
	d.ActionScores, err = pg.Append(ctx, q.pool, d.ActionScores, func(r pgx.CollectableRow) (s ActionScore, err error) {
		err = r.Scan(&s.RewardModelID, &s.RewardModelName, &s.StepID, &s.Score, &s.Credit, &s.CreatedAt)
		s.CreatedAt = s.CreatedAt.UTC()
		return s, err
	}, `SELECT a.model_id, a.model_name, a.step_id, a.score, a.credit, a.created_at FROM rm_action_scores a
		JOIN rm_steps s ON s.id = a.step_id WHERE a.trace_id = $1 ORDER BY a.model_id, s.idx`, d.ID)
	if err != nil {
		return err
	}
	d.ScoringRuns, err = pg.Append(ctx, q.pool, d.ScoringRuns, func(r pgx.CollectableRow) (ScoringRun, error) { return scanRun(r) },
		`SELECT DISTINCT ON (r.model_id) `+runCols+` FROM rm_scoring_runs r WHERE r.trace_id = $1 ORDER BY r.model_id, r.seq DESC`, d.ID)
	return err
}

// StuckRun is a scoring run running since StartedAt.
type StuckRun struct {
	ID, TraceID, ModelID string
	StartedAt            time.Time
}

// StuckScoringRuns lists runs that have been running since before cutoff.
func (q *Queries) StuckScoringRuns(ctx context.Context, cutoff time.Time) ([]StuckRun, error) {
	return pg.Append(ctx, q.pool, nil, func(row pgx.CollectableRow) (r StuckRun, err error) {
		err = row.Scan(&r.ID, &r.TraceID, &r.ModelID, &r.StartedAt)
		return r, err
	}, `SELECT id, trace_id, model_id, started_at FROM rm_scoring_runs WHERE status = 'running' AND started_at < $1`, cutoff)
}
