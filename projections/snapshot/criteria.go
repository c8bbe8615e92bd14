package snapshot

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/duck"
)

// The `criteria` table, and the values a label rename renames in
// `annotations`, as the account's criteria stream says.
var (
	defineCriterion = touchAllOn(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.CriterionDefinedV1) error {
		labels := p.Labels
		if labels == nil {
			labels = []events.CriterionLabel{}
		}
		return tx.UpsertCriterion(ctx, duck.CriterionRow{ID: p.CriterionID, Name: p.Name, Description: p.Description, Kind: p.Kind,
			AppliesTo: p.AppliesTo, ScaleMax: p.ScaleMax, Labels: labels, CreatedAt: e.RecordedAt})
	})
	changeCriterion = touchAllOn(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.CriterionChangedV1) error {
		r, ok, err := tx.Criterion(ctx, p.CriterionID)
		if err != nil || !ok {
			return err
		}
		var old []events.CriterionLabel
		if raw, _ := r.Labels.(json.RawMessage); len(raw) > 0 {
			if err := json.Unmarshal(raw, &old); err != nil {
				return fmt.Errorf("criterion %s labels: %w", p.CriterionID, err)
			}
		}
		for from, to := range criteria.Renames(old, p.Labels) {
			if err := tx.RenameValues(ctx, p.CriterionID, from, to); err != nil {
				return err
			}
		}
		r.Name, r.Description, r.Labels = p.Name, p.Description, p.Labels
		if p.Labels == nil {
			r.Labels = []events.CriterionLabel{}
		}
		return tx.UpsertCriterion(ctx, r)
	})
	archiveCriterion = touchAllOn(func(ctx context.Context, tx *duck.Tx, e events.Envelope, p events.CriterionArchivedV1) error {
		r, ok, err := tx.Criterion(ctx, p.CriterionID)
		if err != nil || !ok {
			return err
		}
		r.Archived = true
		return tx.UpsertCriterion(ctx, r)
	})
)
