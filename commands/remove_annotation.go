package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// RemoveAnnotation is DELETE /annotations/{id}.
func (c *Commands) RemoveAnnotation(ctx context.Context, actor Actor, traceID, annotationID string) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		st, err := c.ownedTrace(ctx, actor, traceID)
		if err != nil {
			return Result{}, asAnnotationNotFound(err, annotationID)
		}
		if err := mayChangeAnnotation(st, annotationID, actor); err != nil {
			return Result{}, err
		}
		p, err := traces.DecideRemoveAnnotation(st, annotationID)
		if err != nil {
			return Result{}, err
		}
		return c.appendToTrace(ctx, actor, st, events.AnnotationRemoved, p)
	})
}
