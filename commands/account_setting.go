package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// appendAccountSetting records one setting of an account (review overlap,
// retention, the reward-model switch) as an event of type typ on its user
// stream, at the stream's current version: an unknown account is not
// found, and a concurrent change is a conflict the caller may retry.
func (c *Streams) appendAccountSetting(ctx context.Context, actor Actor, userID, typ string, payload any) (Result, error) {
	stream := events.UserStream(userID)
	evs, err := c.loadStream(ctx, stream)
	if err != nil {
		return Result{}, err
	}
	if len(evs) == 0 {
		return Result{}, domain.NotFound("user", userID)
	}
	return c.appendEvent(ctx, actor, stream, userID, evs[len(evs)-1].Version, typ, payload)
}
