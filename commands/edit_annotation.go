package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// EditAnnotation is PATCH /annotations/{id}. TraceID comes from the read
// model's annotation → trace lookup; the decision is made on the stream.
type EditAnnotation struct {
	Actor   Actor
	TraceID string
	Edit    traces.EditAnnotationInput
}

// EditAnnotationHandler runs EditAnnotation.
type EditAnnotationHandler struct{ *Streams }

func (c EditAnnotationHandler) Handle(ctx context.Context, cmd EditAnnotation) (Result, error) {
	in := cmd.Edit
	in.EditorID = cmd.Actor.UserID
	return retryOnConflict(func() (Result, error) {
		st, err := c.ownedTrace(ctx, cmd.Actor, cmd.TraceID)
		if err != nil {
			return Result{}, asAnnotationNotFound(err, in.AnnotationID)
		}
		if err := mayChangeAnnotation(st, in.AnnotationID, cmd.Actor); err != nil {
			return Result{}, err
		}
		if a := st.Annotations[in.AnnotationID]; a != nil && a.CriterionID != "" {
			cs, err := c.criteria(ctx, cmd.Actor.UserID)
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
		return c.appendWithPrior(ctx, cmd.Actor, st, events.AnnotationEdited, p, prior)
	})
}
