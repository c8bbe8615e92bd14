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
type DefineCriterion struct {
	Actor      Actor
	Definition criteria.DefineInput
}

// DefineCriterionHandler runs DefineCriterion.
type DefineCriterionHandler struct{ *Streams }

func (c DefineCriterionHandler) Handle(ctx context.Context, cmd DefineCriterion) (DefineCriterionResult, error) {
	in := cmd.Definition
	in.CriterionID = newID()
	r, err := c.onCriteria(ctx, cmd.Actor, func(st criteria.State) (string, any, error) {
		p, err := criteria.DecideDefine(st, in)
		return events.CriterionDefined, p, err
	})
	return DefineCriterionResult{Result: r, CriterionID: in.CriterionID}, err
}
