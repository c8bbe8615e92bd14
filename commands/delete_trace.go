package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
)

// DeleteTrace appends trace.deleted; read models drop the trace and its
// annotations, the log keeps the fact. Another owner's trace is not found.
func (c *Commands) DeleteTrace(ctx context.Context, actor Actor, traceID string) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		st, err := c.ownedTrace(ctx, actor, traceID)
		if err != nil {
			return Result{}, err
		}
		return c.appendToTrace(ctx, actor, st, events.TraceDeleted, events.TraceDeletedV1{TraceID: traceID})
	})
}
