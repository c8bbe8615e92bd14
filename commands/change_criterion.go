package commands

import (
	"context"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
)

// ChangeCriterion is PATCH /criteria/{id}: a new name, description or
// labels (labels renamed, re-scored or appended, never removed).
func (c *Commands) ChangeCriterion(ctx context.Context, actor Actor, in criteria.ChangeInput) (Result, error) {
	return c.onCriteria(ctx, actor, func(st criteria.State) (string, any, error) {
		p, err := criteria.DecideChange(st, in)
		return events.CriterionChanged, p, err
	})
}
