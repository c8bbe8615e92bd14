package commands

import (
	"context"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
)

// SetGuidelines is PUT /guidelines: the account's review guidelines
// (Markdown, at most 64 KiB) replace the previous ones. The last write
// wins, so no stream version is checked.
type SetGuidelines struct {
	Actor    Actor
	Markdown *string
}

// SetGuidelinesHandler runs SetGuidelines.
type SetGuidelinesHandler struct{ *Streams }

func (c SetGuidelinesHandler) Handle(ctx context.Context, cmd SetGuidelines) (Result, error) {
	p, err := criteria.DecideGuidelines(cmd.Markdown)
	if err != nil {
		return Result{}, err
	}
	return c.append(ctx, cmd.Actor, nil, []events.New{{ID: newID(), Stream: events.GuidelinesStream(cmd.Actor.UserID),
		OwnerID: cmd.Actor.UserID, Type: events.GuidelinesSet, Payload: p}})
}
