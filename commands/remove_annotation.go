package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// RemoveAnnotation is DELETE /annotations/{id}.
type RemoveAnnotation struct {
	Actor        Actor
	TraceID      string
	AnnotationID string
}

// RemoveAnnotationHandler runs RemoveAnnotation.
type RemoveAnnotationHandler struct{ *Streams }

func (c RemoveAnnotationHandler) Handle(ctx context.Context, cmd RemoveAnnotation) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		st, err := c.ownedTrace(ctx, cmd.Actor, cmd.TraceID)
		if err != nil {
			return Result{}, asAnnotationNotFound(err, cmd.AnnotationID)
		}
		if err := mayChangeAnnotation(st, cmd.AnnotationID, cmd.Actor); err != nil {
			return Result{}, err
		}
		p, err := traces.DecideRemoveAnnotation(st, cmd.AnnotationID)
		if err != nil {
			return Result{}, err
		}
		return c.appendToTrace(ctx, cmd.Actor, st, events.AnnotationRemoved, p)
	})
}
