package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
)

// SetRewardModelsEnabled turns every /api/v1/rm route on or off for one
// account (off answers 404) without touching its data.
func (c *Commands) SetRewardModelsEnabled(ctx context.Context, userID string, enabled bool) (Result, error) {
	return c.appendAccountSetting(ctx, Actor{}, userID, events.UserRewardModelsEnabledChanged,
		events.UserRewardModelsEnabledChangedV1{UserID: userID, Enabled: enabled})
}
