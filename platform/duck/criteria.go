package duck

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"
)

// CriterionRow is one row of `criteria`. Labels are the categorical
// labels ([] otherwise); ScaleMax is 0 for criteria that are no scale.
type CriterionRow struct {
	ID, Name, Description, Kind, AppliesTo string
	ScaleMax                               int
	Labels                                 any
	Archived                               bool
	CreatedAt                              time.Time
}

// UpsertCriterion inserts or replaces the criterion row with r.ID.
func (t *Tx) UpsertCriterion(ctx context.Context, r CriterionRow) error {
	labels, err := jsonText(r.Labels)
	if err != nil {
		return err
	}
	var scaleMax any
	if r.ScaleMax > 0 {
		scaleMax = r.ScaleMax
	}
	if err := t.Exec(ctx, "DELETE FROM main.criteria WHERE criterion_id = ?", r.ID); err != nil {
		return err
	}
	return t.Exec(ctx, `INSERT INTO main.criteria VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Name, r.Description, r.Kind, r.AppliesTo, scaleMax, labels, r.Archived, nullTime(r.CreatedAt))
}

// Criterion returns the criterion row with id (ok false when the snapshot
// has none), its labels as JSON text.
func (t *Tx) Criterion(ctx context.Context, id string) (r CriterionRow, ok bool, err error) {
	var labels *string
	var scaleMax *int
	err = t.conn.QueryRowContext(ctx, `SELECT criterion_id, name, description, kind, applies_to, scale_max, labels::VARCHAR, archived, created_at
		FROM main.criteria WHERE criterion_id = ?`, id).Scan(&r.ID, &r.Name, &r.Description, &r.Kind, &r.AppliesTo, &scaleMax, &labels, &r.Archived, &r.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
	}
	if scaleMax != nil {
		r.ScaleMax = *scaleMax
	}
	if labels != nil {
		r.Labels = json.RawMessage(*labels)
	}
	return r, true, nil
}

// RenameValues renames a criterion's stored values from one text to
// another (a label renamed).
func (t *Tx) RenameValues(ctx context.Context, criterionID, from, to string) error {
	return t.Exec(ctx, `UPDATE main.annotations SET value = ? WHERE criterion_id = ? AND value = ?`, to, criterionID, from)
}
