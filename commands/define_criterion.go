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
	r, err := retryOnConflict(func() (Result, error) {
		st, err := c.criteria(ctx, actor.UserID)
		if err != nil {
			return Result{}, err
		}
		p, err := criteria.DecideDefine(st, in)
		if err != nil {
			return Result{}, err
		}
		return c.appendToCriteria(ctx, actor, st, events.CriterionDefined, p)
	})
	return DefineCriterionResult{Result: r, CriterionID: in.CriterionID}, err
}

// criteria loads an account's criteria.
func (c *Commands) criteria(ctx context.Context, ownerID string) (criteria.State, error) {
	stream := events.CriteriaStream(ownerID)
	loaded, err := c.store.LoadStreams(ctx, []string{stream})
	if err != nil {
		return criteria.State{}, err
	}
	return criteria.Fold(loaded[stream])
}

// appendToCriteria appends one event to the actor's criteria stream at the
// loaded state's version.
func (c *Commands) appendToCriteria(ctx context.Context, actor Actor, st criteria.State, typ string, payload any) (Result, error) {
	stream := events.CriteriaStream(actor.UserID)
	return c.append(ctx, actor, map[string]int64{stream: st.Version}, []events.New{{
		ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: typ, Payload: payload}})
}
