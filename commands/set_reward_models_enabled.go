package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
)

// SetRewardModelsEnabled turns every /api/v1/rm route on or off for one
// account (off answers 404) without touching its data.
type SetRewardModelsEnabled struct {
	UserID  string
	Enabled bool
}

// SetRewardModelsEnabledHandler runs SetRewardModelsEnabled.
type SetRewardModelsEnabledHandler struct{ *Streams }

func (c SetRewardModelsEnabledHandler) Handle(ctx context.Context, cmd SetRewardModelsEnabled) (Result, error) {
	return c.appendAccountSetting(ctx, Actor{}, cmd.UserID, events.UserRewardModelsEnabledChanged,
		events.UserRewardModelsEnabledChangedV1{UserID: cmd.UserID, Enabled: cmd.Enabled})
}
