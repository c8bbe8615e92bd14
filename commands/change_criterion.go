package commands

import (
	"context"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
)

// ChangeCriterion is PATCH /criteria/{id}: a new name, description or
// labels (labels renamed, re-scored or appended, never removed).
type ChangeCriterion struct {
	Actor  Actor
	Change criteria.ChangeInput
}

// ChangeCriterionHandler runs ChangeCriterion.
type ChangeCriterionHandler struct{ *Streams }

func (c ChangeCriterionHandler) Handle(ctx context.Context, cmd ChangeCriterion) (Result, error) {
	return c.onCriteria(ctx, cmd.Actor, func(st criteria.State) (string, any, error) {
		p, err := criteria.DecideChange(st, cmd.Change)
		return events.CriterionChanged, p, err
	})
}
