package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ModelEvents returns a reward model's stream as stored, oldest first, so an
// API surface can answer a write with the model as of the events that write
// appended — the state the log says — instead of whatever the read model
// shows (which may lag, or already show a fast worker's later events).
// Another owner's model is not found.
func (c *Streams) ModelEvents(ctx context.Context, ownerID, modelID string) ([]events.Envelope, error) {
	evs, err := c.loadStream(ctx, events.RewardModelStream(modelID))
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 || evs[0].OwnerID != ownerID {
		return nil, domain.NotFound("reward model", modelID)
	}
	return evs, nil
}

// loadModel returns a model's state; another owner's (ownerID != "") or a
// missing model is not found.
func (c *Streams) loadModel(ctx context.Context, ownerID, modelID string) (rewardmodels.State, error) {
	evs, err := c.loadStream(ctx, events.RewardModelStream(modelID))
	if err != nil {
		return rewardmodels.State{}, err
	}
	st, err := rewardmodels.Fold(evs)
	if err != nil {
		return rewardmodels.State{}, err
	}
	if st.ID == "" || (ownerID != "" && st.OwnerID != ownerID) {
		return rewardmodels.State{}, domain.NotFound("reward model", modelID)
	}
	return st, nil
}

// appendToModel appends events to a loaded model's stream at its version
// (plus any extra events on other streams, unchecked).
func (c *Streams) appendToModel(ctx context.Context, actor Actor, st rewardmodels.State, typ string, payload any, extra ...events.New) (Result, error) {
	stream := events.RewardModelStream(st.ID)
	evs := append([]events.New{{ID: newID(), Stream: stream, OwnerID: st.OwnerID, Type: typ, Payload: payload}}, extra...)
	return c.append(ctx, actor, map[string]int64{stream: st.Version}, evs)
}

// Model returns any model's state (operator tools: audit).
// Commands decide on this fold; the read model may lag a write.
func (c *Streams) Model(ctx context.Context, modelID string) (rewardmodels.State, error) {
	return c.loadModel(ctx, "", modelID)
}
