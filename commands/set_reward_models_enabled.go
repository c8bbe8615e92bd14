package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// SetRewardModelsEnabled turns every /api/v1/rm route on or off for one
// account (off answers 404) without touching its data.
func (c *Commands) SetRewardModelsEnabled(ctx context.Context, userID string, enabled bool) (Result, error) {
	stream := events.UserStream(userID)
	loaded, err := c.store.LoadStreams(ctx, []string{stream})
	if err != nil {
		return Result{}, err
	}
	evs := loaded[stream]
	if len(evs) == 0 {
		return Result{}, domain.NotFound("user", userID)
	}
	return c.append(ctx, Actor{}, map[string]int64{stream: evs[len(evs)-1].Version}, []events.New{{
		ID: newID(), Stream: stream, OwnerID: userID, Type: events.UserRewardModelsEnabledChanged,
		Payload: events.UserRewardModelsEnabledChangedV1{UserID: userID, Enabled: enabled},
	}})
}
