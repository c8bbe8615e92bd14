package commands

import (
	"context"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
)

// DefineCriterionResult carries the new criterion's id.
type DefineCriterionResult struct {
	Result
	CriterionID string
}

// DefineCriterion is POST /criteria: it appends criterion.defined to the
// account's criteria stream at the version the name was checked against,
// so two criteria of one name cannot both be created.
func (c *Commands) DefineCriterion(ctx context.Context, actor Actor, in criteria.DefineInput) (DefineCriterionResult, error) {
	in.CriterionID = newID()
	r, err := c.onCriteria(ctx, actor, func(st criteria.State) (string, any, error) {
		p, err := criteria.DecideDefine(st, in)
		return events.CriterionDefined, p, err
	})
	return DefineCriterionResult{Result: r, CriterionID: in.CriterionID}, err
}
