package commands

import (
	"context"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
)

// criteria loads an account's criteria.
func (c *Streams) criteria(ctx context.Context, ownerID string) (criteria.State, error) {
	evs, err := c.loadStream(ctx, events.CriteriaStream(ownerID))
	if err != nil {
		return criteria.State{}, err
	}
	return criteria.Fold(evs)
}

// appendToCriteria appends one event to the actor's criteria stream at the
// loaded state's version.
func (c *Streams) appendToCriteria(ctx context.Context, actor Actor, st criteria.State, typ string, payload any) (Result, error) {
	return c.appendEvent(ctx, actor, events.CriteriaStream(actor.UserID), actor.UserID, st.Version, typ, payload)
}

// onCriteria is decideOn for the actor's criteria stream.
func (c *Streams) onCriteria(ctx context.Context, actor Actor, decide func(criteria.State) (string, any, error)) (Result, error) {
	load := func(ctx context.Context) (criteria.State, error) { return c.criteria(ctx, actor.UserID) }
	return decideOn(ctx, load, c.appendToCriteria, actor, decide)
}
