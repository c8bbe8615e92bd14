package readmodel

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
)

// criteriaAppliers apply an account's criterion definitions and guidelines.
// A label rename also renames the stored values that name the label, so a
// value keeps showing the choice the reviewer made.
var criteriaAppliers = map[string]applier{
	events.CriterionDefined: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.CriterionDefinedV1) error {
		var scaleMax any
		if p.ScaleMax > 0 {
			scaleMax = p.ScaleMax
		}
		return exec(ctx, tx, `INSERT INTO rm_criteria (id, owner_id, name, description, kind, labels, scale_max, applies_to, created_at, seq)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING`,
			p.CriterionID, e.OwnerID, p.Name, p.Description, p.Kind, labelsJSON(p.Labels), scaleMax, p.AppliesTo, e.RecordedAt, e.Seq)
	}),
	events.CriterionChanged: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.CriterionChangedV1) error {
		var oldRaw []byte
		err := tx.QueryRow(ctx, `SELECT labels FROM rm_criteria WHERE id = $1`, p.CriterionID).Scan(&oldRaw)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		var old []events.CriterionLabel
		if err := json.Unmarshal(oldRaw, &old); err != nil {
			return err
		}
		for from, to := range criteria.Renames(old, p.Labels) {
			if _, err := tx.Exec(ctx, `UPDATE rm_annotations SET value = to_jsonb($3::text) WHERE criterion_id = $1 AND value = to_jsonb($2::text)`,
				p.CriterionID, from, to); err != nil {
				return err
			}
		}
		return exec(ctx, tx, `UPDATE rm_criteria SET name = $2, description = $3, labels = $4 WHERE id = $1`,
			p.CriterionID, p.Name, p.Description, labelsJSON(p.Labels))
	}),
	events.CriterionArchived: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.CriterionArchivedV1) error {
		return exec(ctx, tx, `UPDATE rm_criteria SET archived = true WHERE id = $1`, p.CriterionID)
	}),
	events.GuidelinesSet: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.GuidelinesSetV1) error {
		return exec(ctx, tx, `INSERT INTO rm_guidelines (owner_id, markdown, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (owner_id) DO UPDATE SET markdown = EXCLUDED.markdown, updated_at = EXCLUDED.updated_at`,
			e.OwnerID, p.Markdown, e.RecordedAt)
	}),
}

// labelsJSON is a criterion's labels for the jsonb column ([] when none).
func labelsJSON(labels []events.CriterionLabel) string {
	if labels == nil {
		labels = []events.CriterionLabel{}
	}
	b, _ := json.Marshal(labels)
	return string(b)
}
