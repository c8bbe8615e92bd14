package commands

import (
	"context"

	"github.com/criticml/critic/domain"
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

// mayChangeAnnotation: an annotation is changed or removed by its author
// (the member who made it) or by an admin; another member of the account
// gets 403, so one reviewer cannot rewrite another's judgment. A missing
// annotation is left to the decision (404).
func mayChangeAnnotation(st traces.State, annotationID string, actor Actor) error {
	a := st.Annotations[annotationID]
	if a == nil || actor.Moderates || a.AuthorID == actor.Member() {
		return nil
	}
	return &domain.ForbiddenError{Message: "only the annotation's author or an admin may change or remove annotation " + annotationID}
}

// asAnnotationNotFound reports a missing trace as the missing annotation the
// caller asked about.
func asAnnotationNotFound(err error, annotationID string) error {
	if _, ok := err.(*domain.NotFoundError); ok {
		return domain.NotFound("annotation", annotationID)
	}
	return err
}
