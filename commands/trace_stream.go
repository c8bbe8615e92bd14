package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// ownedTrace loads a trace's stream; a trace that does not exist, was
// deleted, or belongs to someone else is not found.
func (c *Commands) ownedTrace(ctx context.Context, actor Actor, traceID string) (traces.State, error) {
	stream := events.TraceStream(traceID)
	loaded, err := c.store.LoadStreams(ctx, []string{stream})
	if err != nil {
		return traces.State{}, err
	}
	st, err := traces.Fold(traceID, loaded[stream])
	if err != nil {
		return traces.State{}, err
	}
	if !st.Exists || st.OwnerID != actor.UserID {
		return traces.State{}, domain.NotFound("trace", traceID)
	}
	return st, nil
}

// appendToTrace appends one event to a loaded trace's stream at its version.
func (c *Commands) appendToTrace(ctx context.Context, actor Actor, st traces.State, typ string, payload any) (Result, error) {
	stream := events.TraceStream(st.ID)
	return c.append(ctx, actor, map[string]int64{stream: st.Version}, []events.New{{
		ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: typ, Payload: payload}})
}
