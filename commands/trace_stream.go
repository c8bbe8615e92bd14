package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// ownedTrace loads a trace's stream; a trace that does not exist, was
// deleted, or belongs to someone else is not found.
func (c *Streams) ownedTrace(ctx context.Context, actor Actor, traceID string) (traces.State, error) {
	owned, err := c.ownedTraces(ctx, actor, []string{traceID})
	if err != nil {
		return traces.State{}, err
	}
	st, ok := owned[traceID]
	if !ok {
		return traces.State{}, domain.NotFound("trace", traceID)
	}
	return st, nil
}

// ownedTraces loads many traces' streams in one read of the log: the states
// of those of ids that exist and are the actor's (the others are absent),
// by id.
func (c *Streams) ownedTraces(ctx context.Context, actor Actor, ids []string) (map[string]traces.State, error) {
	streams := make([]string, len(ids))
	for i, id := range ids {
		streams[i] = events.TraceStream(id)
	}
	loaded, err := c.store.LoadStreams(ctx, streams)
	if err != nil {
		return nil, err
	}
	out := make(map[string]traces.State, len(ids))
	for i, id := range ids {
		st, err := traces.Fold(id, loaded[streams[i]])
		if err != nil {
			return nil, err
		}
		if st.Exists && st.OwnerID == actor.UserID {
			out[id] = st
		}
	}
	return out, nil
}

// appendToTrace appends one event to a loaded trace's stream at its version,
// owned as the stream is (a worker's report has no owner of its own).
func (c *Streams) appendToTrace(ctx context.Context, actor Actor, st traces.State, typ string, payload any) (Result, error) {
	return c.appendEvent(ctx, actor, events.TraceStream(st.ID), st.OwnerID, st.Version, typ, payload)
}

// onTrace is decideOn for a trace's stream: it loads the trace actor may
// write to (loadTraceFor: a user's own, any for a worker), decides one event
// on it (typ "": nothing) and appends it at the version read, deciding again
// when another writer moved the stream in between.
func (c *Streams) onTrace(ctx context.Context, actor Actor, traceID string, decide func(traces.State) (string, any, error)) (Result, error) {
	load := func(ctx context.Context) (traces.State, error) { return c.loadTraceFor(ctx, actor, traceID) }
	return decideOn(ctx, load, c.appendToTrace, actor, decide)
}
