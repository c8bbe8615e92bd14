package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// DeleteTrace appends trace.deleted; read models drop the trace, the log keeps
// the fact. Another owner's trace is not found.
func (c *Commands) DeleteTrace(ctx context.Context, actor Actor, traceID string) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		stream := events.TraceStream(traceID)
		loaded, err := c.store.LoadStreams(ctx, []string{stream})
		if err != nil {
			return Result{}, err
		}
		var st traces.State
		for _, e := range loaded[stream] {
			st.Apply(e)
		}
		if !st.Exists || st.OwnerID != actor.UserID {
			return Result{}, domain.NotFound("trace", traceID)
		}
		return c.append(ctx, actor, map[string]int64{stream: st.Version}, []events.New{{
			ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: events.TraceDeleted,
			Payload: events.TraceDeletedV1{TraceID: traceID},
		}})
	})
}
