package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// AddAnnotation is POST /traces/{id}/annotations.
type AddAnnotation struct {
	TraceID    string
	StepID     string
	Rating     *int
	Comment    *string
	Quote      *events.Quote
	AuthorName string
}

// AddAnnotationResult carries the new annotation's id.
type AddAnnotationResult struct {
	Result
	AnnotationID string
}

// AddAnnotation validates the annotation against the trace as its stream
// describes it and appends annotation.added to that stream.
func (c *Commands) AddAnnotation(ctx context.Context, actor Actor, in AddAnnotation) (AddAnnotationResult, error) {
	id := newID()
	r, err := retryOnConflict(func() (Result, error) {
		st, err := c.ownedTrace(ctx, actor, in.TraceID)
		if err != nil {
			return Result{}, err
		}
		p, err := traces.DecideAddAnnotation(st, traces.AddAnnotationInput{AnnotationID: id, StepID: in.StepID, Rating: in.Rating,
			Comment: in.Comment, Quote: in.Quote, AuthorID: actor.UserID, AuthorName: in.AuthorName})
		if err != nil {
			return Result{}, err
		}
		return c.appendToTrace(ctx, actor, st, events.AnnotationAdded, p)
	})
	return AddAnnotationResult{Result: r, AnnotationID: id}, err
}
