package readmodel

import (
	"context"
	"encoding/json"

	"github.com/criticml/critic/platform/pg"
	"github.com/jackc/pgx/v5"
)

// TeamJudgment is one member's live judgment of a target (issue 36
// agreement): a whole-trace or step rating, or a criterion's value. A
// member is the annotation's author_id.
type TeamJudgment struct {
	TraceID     string
	TraceTitle  string
	StepID      string // "" = the whole trace
	StepIndex   *int   // the step's zero-based index (nil: the whole trace)
	CriterionID string // "" = a rating
	Member      string
	MemberName  string
	Rating      *int
	Value       json.RawMessage
}

// TeamJudgments lists an account's live judgments that count — ratings and
// criterion values not flagged as label errors — oldest first, so a
// member's later judgment of a target comes after an earlier one.
func (q *Queries) TeamJudgments(ctx context.Context, owner string) ([]TeamJudgment, error) {
	return pg.Append(ctx, q.pool, []TeamJudgment{}, func(r pgx.CollectableRow) (j TeamJudgment, err error) {
		var rating *int16
		var value []byte
		if err := r.Scan(&j.TraceID, &j.TraceTitle, &j.StepID, &j.CriterionID, &j.Member, &j.MemberName, &rating, &value, &j.StepIndex); err != nil {
			return j, err
		}
		j.Rating, j.Value = ratingOf(rating), value
		return j, nil
	}, `SELECT a.trace_id::text, t.title, coalesce(a.step_id::text, ''), coalesce(a.criterion_id::text, ''),
		a.author_id::text, a.author_name, a.rating, a.value, st.idx
		FROM rm_annotations a JOIN rm_traces t ON t.id = a.trace_id LEFT JOIN rm_steps st ON st.id = a.step_id
		WHERE a.owner_id = $1 AND NOT a.label_error AND (a.rating IS NOT NULL OR a.criterion_id IS NOT NULL)
		ORDER BY a.seq`, owner)
}

// Adjudication is an admin's final judgment of a target, as GET /disputed
// shows it.
type Adjudication struct {
	AdjudicationID string          `json:"adjudication_id"`
	TraceID        string          `json:"trace_id"`
	StepID         *string         `json:"step_id"`
	CriterionID    *string         `json:"criterion_id"`
	Rating         *int            `json:"rating"`
	Value          json.RawMessage `json:"value"`
	Reason         string          `json:"reason"`
	By             string          `json:"by"`
}

// Adjudications lists an account's adjudications (the latest per target).
func (q *Queries) Adjudications(ctx context.Context, owner string) ([]Adjudication, error) {
	return pg.Append(ctx, q.pool, []Adjudication{}, func(r pgx.CollectableRow) (a Adjudication, err error) {
		var rating *int16
		var value []byte
		if err := r.Scan(&a.AdjudicationID, &a.TraceID, &a.StepID, &a.CriterionID, &rating, &value, &a.Reason, &a.By); err != nil {
			return a, err
		}
		a.Rating, a.Value = ratingOf(rating), value
		return a, nil
	}, `SELECT id::text, trace_id::text, step_id::text, criterion_id::text, rating, value, reason, adjudicated_by
		FROM rm_adjudications WHERE owner_id = $1 ORDER BY created_at, id`, owner)
}

// ModelPreferences is a reward model's scores of an account's targets at
// their trace's current revision: whole-trace scores by trace id, action
// credits by step id.
func (q *Queries) ModelPreferences(ctx context.Context, owner, model string) (traceScores, actionCredits map[string]float64, err error) {
	traceScores, actionCredits = map[string]float64{}, map[string]float64{}
	var id string
	var v float64
	if err := pg.Each(ctx, q.pool, []any{&id, &v}, func() error {
		traceScores[id] = v
		return nil
	}, `SELECT s.trace_id::text, s.score FROM rm_trace_scores s JOIN rm_traces t ON t.id = s.trace_id AND t.revision = s.revision
		WHERE s.model_id = $1 AND s.owner_id = $2`, model, owner); err != nil {
		return nil, nil, err
	}
	err = pg.Each(ctx, q.pool, []any{&id, &v}, func() error {
		actionCredits[id] = v
		return nil
	}, `SELECT s.step_id::text, s.credit FROM rm_action_scores s JOIN rm_traces t ON t.id = s.trace_id AND t.revision = s.revision
		WHERE s.model_id = $1 AND s.owner_id = $2 AND s.credit IS NOT NULL`, model, owner)
	return traceScores, actionCredits, err
}
