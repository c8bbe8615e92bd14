package readmodel

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
)

// applyCriteria applies an account's criterion definitions and guidelines.
// A label rename also renames the stored values that name the label, so a
// value keeps showing the choice the reviewer made.
func applyCriteria(ctx context.Context, tx pgx.Tx, e events.Envelope) error {
	switch e.Type {
	case events.CriterionDefined:
		var p events.CriterionDefinedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		var scaleMax any
		if p.ScaleMax > 0 {
			scaleMax = p.ScaleMax
		}
		_, err := tx.Exec(ctx, `INSERT INTO rm_criteria (id, owner_id, name, description, kind, labels, scale_max, applies_to, created_at, seq)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING`,
			p.CriterionID, e.OwnerID, p.Name, p.Description, p.Kind, labelsJSON(p.Labels), scaleMax, p.AppliesTo, e.RecordedAt, e.Seq)
		return err
	case events.CriterionChanged:
		var p events.CriterionChangedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
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
		_, err = tx.Exec(ctx, `UPDATE rm_criteria SET name = $2, description = $3, labels = $4 WHERE id = $1`,
			p.CriterionID, p.Name, p.Description, labelsJSON(p.Labels))
		return err
	case events.CriterionArchived:
		var p events.CriterionArchivedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE rm_criteria SET archived = true WHERE id = $1`, p.CriterionID)
		return err
	case events.GuidelinesSet:
		var p events.GuidelinesSetV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO rm_guidelines (owner_id, markdown, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (owner_id) DO UPDATE SET markdown = EXCLUDED.markdown, updated_at = EXCLUDED.updated_at`,
			e.OwnerID, p.Markdown, e.RecordedAt)
		return err
	}
	return nil
}

// labelsJSON is a criterion's labels for the jsonb column ([] when none).
func labelsJSON(labels []events.CriterionLabel) string {
	if labels == nil {
		labels = []events.CriterionLabel{}
	}
	b, _ := json.Marshal(labels)
	return string(b)
}
