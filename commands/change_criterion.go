package commands

import (
	"context"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
)

// ChangeCriterion is PATCH /criteria/{id}: a new name, description or
// labels (labels renamed, re-scored or appended, never removed).
func (c *Commands) ChangeCriterion(ctx context.Context, actor Actor, in criteria.ChangeInput) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		st, err := c.criteria(ctx, actor.UserID)
		if err != nil {
			return Result{}, err
		}
		p, err := criteria.DecideChange(st, in)
		if err != nil {
			return Result{}, err
		}
		return c.appendToCriteria(ctx, actor, st, events.CriterionChanged, p)
	})
}
