package readmodel

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/pg"
)

// Criterion is one of an account's criteria as GET /criteria shows it.
type Criterion struct {
	CriterionID string                  `json:"criterion_id"`
	Name        string                  `json:"name"`
	Description string                  `json:"description"`
	Kind        string                  `json:"kind"`
	Labels      []events.CriterionLabel `json:"labels"`
	ScaleMax    *int                    `json:"scale_max"`
	AppliesTo   string                  `json:"applies_to"`
	Archived    bool                    `json:"archived"`
	CreatedAt   time.Time               `json:"created_at"`
}

// Guidelines are an account's review guidelines (GET /guidelines);
// UpdatedAt is nil while none were ever set.
type Guidelines struct {
	Markdown  string     `json:"markdown"`
	UpdatedAt *time.Time `json:"updated_at"`
}

// ListCriteria returns the owner's criteria in creation order, archived
// ones only when asked.
func (q *Queries) ListCriteria(ctx context.Context, owner string, includeArchived bool) ([]Criterion, error) {
	return pg.Append(ctx, q.pool, []Criterion{}, func(r pgx.CollectableRow) (c Criterion, err error) {
		var labels []byte
		if err := r.Scan(&c.CriterionID, &c.Name, &c.Description, &c.Kind, &labels, &c.ScaleMax, &c.AppliesTo, &c.Archived, &c.CreatedAt); err != nil {
			return c, err
		}
		c.CreatedAt = c.CreatedAt.UTC()
		err = json.Unmarshal(labels, &c.Labels)
		return c, err
	}, `SELECT id, name, description, kind, labels, scale_max, applies_to, archived, created_at
		FROM rm_criteria WHERE owner_id = $1 AND ($2 OR NOT archived) ORDER BY seq`, owner, includeArchived)
}

// GetCriterion returns one of the owner's criteria, archived or not.
func (q *Queries) GetCriterion(ctx context.Context, owner, id string) (*Criterion, error) {
	if !validUUID(id) {
		return nil, domain.NotFound("criterion", id)
	}
	all, err := q.ListCriteria(ctx, owner, true)
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(all, func(c Criterion) bool { return c.CriterionID == id }); i >= 0 {
		return &all[i], nil
	}
	return nil, domain.NotFound("criterion", id)
}

// GetGuidelines returns the owner's guidelines ("" and no time when none).
func (q *Queries) GetGuidelines(ctx context.Context, owner string) (Guidelines, error) {
	var g Guidelines
	var at time.Time
	err := q.pool.QueryRow(ctx, `SELECT markdown, updated_at FROM rm_guidelines WHERE owner_id = $1`, owner).Scan(&g.Markdown, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return g, nil
	}
	if err != nil {
		return g, err
	}
	g.UpdatedAt = new(at.UTC())
	return g, nil
}
