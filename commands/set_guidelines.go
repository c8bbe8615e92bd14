package commands

import (
	"context"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
)

// SetGuidelines is PUT /guidelines: the account's review guidelines
// (Markdown, at most 64 KiB) replace the previous ones. The last write
// wins, so no stream version is checked.
func (c *Commands) SetGuidelines(ctx context.Context, actor Actor, markdown *string) (Result, error) {
	p, err := criteria.DecideGuidelines(markdown)
	if err != nil {
		return Result{}, err
	}
	return c.append(ctx, actor, nil, []events.New{{ID: newID(), Stream: events.GuidelinesStream(actor.UserID),
		OwnerID: actor.UserID, Type: events.GuidelinesSet, Payload: p}})
}
