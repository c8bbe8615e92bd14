package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// ModelEvents returns a reward model's stream as stored, oldest first, so an
// API surface can answer a write with the model as of the events that write
// appended — the state the log says — instead of whatever the read model
// shows (which may lag, or already show a fast worker's later events).
// Another owner's model is not found.
func (c *Commands) ModelEvents(ctx context.Context, ownerID, modelID string) ([]events.Envelope, error) {
	stream := events.RewardModelStream(modelID)
	loaded, err := c.store.LoadStreams(ctx, []string{stream})
	if err != nil {
		return nil, err
	}
	evs := loaded[stream]
	if len(evs) == 0 || evs[0].OwnerID != ownerID {
		return nil, domain.NotFound("reward model", modelID)
	}
	return evs, nil
}
