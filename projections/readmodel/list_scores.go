package readmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/assessment"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/platform/pg"
)

// The trace list's automatic scores (spec 001 "Step scores", spec 002 "Action
// credit") live on the rm_traces row — action_credit, scored_actions,
// credit_model_id, trace_score, outcome, latest_score, latest_score_model_id
// — so GET /traces sorts and filters them through an index. Each is derived
// from rows the read model already holds and recomputed, inside the same
// transaction, after any event that changes those rows; a replay therefore
// gives the same values, and a deleted trace takes them with its row.

// listColumnAppliers run after the main applier of their event type.
var listColumnAppliers = map[string]applier{
	events.ActionsScored: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.ActionsScoredV1) error {
		ids := make([]string, len(p.Scores))
		for i, s := range p.Scores {
			ids[i] = s.TraceID
		}
		return refreshActionCredit(ctx, tx, ids)
	}),
	events.TracesScored: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TracesScoredV1) error {
		ids := make([]string, len(p.Scores))
		for i, s := range p.Scores {
			ids[i] = s.TraceID
		}
		return refreshLatestScore(ctx, tx, ids)
	}),
	// A revision drops the whole-trace scores, may drop the action
	// scores, and changes the steps the assessment reads.
	events.TraceRevised: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceRevisedV1) error {
		ids := []string{p.TraceID}
		if err := refreshActionCredit(ctx, tx, ids); err != nil {
			return err
		}
		if err := refreshLatestScore(ctx, tx, ids); err != nil {
			return err
		}
		return refreshAssessment(ctx, tx, p.TraceID)
	}),
	// An import is buffered for COPY; only one that may carry labels or a
	// rubric summary (a cheap look at the payload) is written at once so
	// its assessment can be read back. The rest keep their batch.
	events.TraceImported: func(ctx context.Context, w *writer, e events.Envelope) error {
		if !bytes.Contains(e.Payload, []byte(`"`+labels.MetadataKey+`"`)) && !bytes.Contains(e.Payload, []byte(`"`+assessment.RubricSummaryKey+`"`)) {
			return nil
		}
		var h struct {
			TraceID string `json:"trace_id"`
		}
		if err := json.Unmarshal(e.Payload, &h); err != nil || h.TraceID == "" {
			return nil // the main applier decoded it; an encrypted payload has no labels to read
		}
		if err := w.flush(ctx); err != nil {
			return err
		}
		return refreshAssessment(ctx, w.tx, h.TraceID)
	},
	events.TraceStepsLabeled: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceStepsLabeledV1) error {
		return refreshAssessment(ctx, tx, p.TraceID)
	}),
	events.TraceStepsQualityChecked: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.TraceStepsQualityCheckedV1) error {
		return refreshAssessment(ctx, tx, p.TraceID)
	}),
}

// refreshActionCredit sets each trace's action credit from the model that
// scored its actions most recently (ties: the lower model id, as the trace's
// latest score breaks them): the mean of that model's credits and how many
// actions it scored; NULL and 0 once no action scores are left.
func refreshActionCredit(ctx context.Context, tx pgx.Tx, traceIDs []string) error {
	return exec(ctx, tx, `UPDATE rm_traces t SET credit_model_id = x.model_id, action_credit = x.credit, scored_actions = COALESCE(x.n, 0)
		FROM (SELECT DISTINCT id FROM unnest($1::uuid[]) AS u(id)) u
		LEFT JOIN LATERAL (SELECT a.model_id, avg(a.credit) AS credit, count(*) AS n FROM rm_action_scores a
			WHERE a.trace_id = u.id AND a.model_id = (SELECT m.model_id FROM rm_action_scores m WHERE m.trace_id = u.id
				ORDER BY m.created_at DESC, m.model_id LIMIT 1)
			GROUP BY a.model_id) x ON true
		WHERE t.id = u.id`, traceIDs)
}

// refreshLatestScore sets each trace's latest whole-trace score: the newest
// row of rm_trace_scores (ties: the lower model id), NULL when none.
func refreshLatestScore(ctx context.Context, tx pgx.Tx, traceIDs []string) error {
	return exec(ctx, tx, `UPDATE rm_traces t SET latest_score = x.score, latest_score_model_id = x.model_id
		FROM (SELECT DISTINCT id FROM unnest($1::uuid[]) AS u(id)) u
		LEFT JOIN LATERAL (SELECT s.model_id, s.score FROM rm_trace_scores s WHERE s.trace_id = u.id
			ORDER BY s.created_at DESC, s.model_id LIMIT 1) x ON true
		WHERE t.id = u.id`, traceIDs)
}

// refreshAssessment sets a trace's trace_score and outcome from its
// automatic annotation, derived by domain/assessment exactly as GET
// /traces/{id} derives step_scores. A trace with no labels of either kind
// and no rubric summary has none, which is decided without loading its
// steps (a live OTLP trace is revised often).
func refreshAssessment(ctx context.Context, tx pgx.Tx, traceID string) error {
	var meta []byte
	var maybe bool
	err := tx.QueryRow(ctx, `SELECT t.metadata, t.metadata ? $2
			OR EXISTS (SELECT 1 FROM rm_step_labels l WHERE l.trace_id = t.id)
			OR EXISTS (SELECT 1 FROM rm_steps s WHERE s.trace_id = t.id AND s.metadata ? $3)
		FROM rm_traces t WHERE t.id = $1`, traceID, assessment.RubricSummaryKey, labels.MetadataKey).Scan(&meta, &maybe)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // deleted since
	}
	if err != nil {
		return err
	}
	var score *float64
	var outcome *string
	if maybe {
		ss, err := storedStepScores(ctx, tx, traceID, meta)
		if err != nil {
			return err
		}
		if ss != nil {
			score = ss.TraceScore
			if ss.Outcome != "" {
				outcome = &ss.Outcome
			}
		}
	}
	return exec(ctx, tx, `UPDATE rm_traces SET trace_score = $2, outcome = $3 WHERE id = $1`, traceID, score, outcome)
}

// storedStepScores is the automatic annotation's step_scores of a stored
// trace (nil when it has none), read through db.
func storedStepScores(ctx context.Context, db pg.Querier, traceID string, metadata []byte) (*assessment.StepScores, error) {
	byTrace, err := stepsByTrace(ctx, db, []string{traceID})
	if err != nil {
		return nil, err
	}
	a, err := assessmentOf(ctx, db, traceID, byTrace[traceID], metadata)
	if err != nil {
		return nil, err
	}
	return a.StepScores, nil
}

// assessmentOf is the automatic annotation of a stored trace, from its steps
// and metadata and the model-made labels and quality checks read through db.
func assessmentOf(ctx context.Context, db pg.Querier, traceID string, stored []Step, metadata []byte) (assessment.Assessment, error) {
	steps := make([]domain.Step, len(stored))
	ids := make([]string, len(stored))
	for i, s := range stored {
		st, err := DomainStep(s)
		if err != nil {
			return assessment.Assessment{}, fmt.Errorf("readmodel: step %s: %w", s.ID, err)
		}
		steps[i], ids[i] = st, s.ID
	}
	var meta map[string]any
	if len(metadata) > 0 && string(metadata) != "null" {
		if err := json.Unmarshal(metadata, &meta); err != nil {
			return assessment.Assessment{}, fmt.Errorf("readmodel: trace metadata: %w", err)
		}
	}
	labeled, err := storedLabels(ctx, db, traceID)
	if err != nil {
		return assessment.Assessment{}, err
	}
	checks, err := storedQualityChecks(ctx, db, traceID)
	if err != nil {
		return assessment.Assessment{}, err
	}
	return assessment.Of(steps, ids, meta, labeled, checks), nil
}
