package commands

import (
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/traces"
)

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
