package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// EditAnnotation is PATCH /annotations/{id}. TraceID comes from the read
// model's annotation → trace lookup; the decision is made on the stream.
func (c *Commands) EditAnnotation(ctx context.Context, actor Actor, traceID string, in traces.EditAnnotationInput) (Result, error) {
	in.EditorID = actor.UserID
	return retryOnConflict(func() (Result, error) {
		st, err := c.ownedTrace(ctx, actor, traceID)
		if err != nil {
			return Result{}, asAnnotationNotFound(err, in.AnnotationID)
		}
		if err := mayChangeAnnotation(st, in.AnnotationID, actor); err != nil {
			return Result{}, err
		}
		if a := st.Annotations[in.AnnotationID]; a != nil && a.CriterionID != "" {
			cs, err := c.criteria(ctx, actor.UserID)
			if err != nil {
				return Result{}, err
			}
			in.Criterion, _ = cs.Get(a.CriterionID)
		}
		p, err := traces.DecideEditAnnotation(st, in)
		if err != nil {
			return Result{}, err
		}
		var prior traces.PriorRatings
		if in.Rating.Set && p.Rating != nil {
			a := st.Annotations[in.AnnotationID]
			prior = traces.SupersedeRatings(st, a.AuthorID, a.StepID, a.ID)
		}
		return c.appendWithPrior(ctx, actor, st, events.AnnotationEdited, p, prior)
	})
}
