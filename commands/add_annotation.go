package commands

import (
	"context"
	"encoding/json"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// AddAnnotationInput is what POST /traces/{id}/annotations asks.
type AddAnnotationInput struct {
	TraceID    string
	StepID     string
	Rating     *int
	Comment    *string
	Quote      *events.Quote
	AuthorName string
	// CriterionID and Value give a criterion's value instead of a rating
	// or comment.
	CriterionID string
	Value       json.RawMessage
}

// AddAnnotationResult carries the new annotation's id.
type AddAnnotationResult struct {
	Result
	AnnotationID string
}

// AddAnnotation validates the annotation against the trace as its stream
// describes it and appends annotation.added to that stream. A rating
// replaces the author's earlier rating on the same target in the same
// append (traces.SupersedeRatings), so the log never holds two live votes
// of one reviewer and replay arrives at the same one; a criterion's value
// likewise replaces the author's earlier value of that criterion there.
type AddAnnotation struct {
	Actor Actor
	Input AddAnnotationInput
}

// AddAnnotationHandler runs AddAnnotation.
type AddAnnotationHandler struct{ *Streams }

func (c AddAnnotationHandler) Handle(ctx context.Context, cmd AddAnnotation) (AddAnnotationResult, error) {
	in := cmd.Input
	id := newID()
	r, err := retryOnConflict(func() (Result, error) {
		st, err := c.ownedTrace(ctx, cmd.Actor, in.TraceID)
		if err != nil {
			return Result{}, err
		}
		dec := traces.AddAnnotationInput{AnnotationID: id, StepID: in.StepID, Rating: in.Rating, Comment: in.Comment,
			Quote: in.Quote, AuthorID: cmd.Actor.Member(), AuthorName: in.AuthorName, CriterionID: in.CriterionID, Value: in.Value}
		if in.CriterionID != "" {
			cs, err := c.criteria(ctx, cmd.Actor.UserID)
			if err != nil {
				return Result{}, err
			}
			dec.Criterion, _ = cs.Get(in.CriterionID)
		}
		p, err := traces.DecideAddAnnotation(st, dec)
		if err != nil {
			return Result{}, err
		}
		var prior traces.PriorRatings
		switch {
		case p.Rating != nil:
			prior = traces.SupersedeRatings(st, p.AuthorID, p.StepID, p.AnnotationID)
		case p.CriterionID != "":
			prior = traces.SupersedeValues(st, p.AuthorID, p.StepID, p.CriterionID, p.AnnotationID)
		}
		return c.appendWithPrior(ctx, cmd.Actor, st, events.AnnotationAdded, p, prior)
	})
	return AddAnnotationResult{Result: r, AnnotationID: id}, err
}

// appendWithPrior appends an annotation event after the changes to the
// author's earlier ratings it supersedes, in one append at the stream's
// version: either all of them are recorded or none.
func (c *Streams) appendWithPrior(ctx context.Context, actor Actor, st traces.State, typ string, payload any, prior traces.PriorRatings) (Result, error) {
	stream := events.TraceStream(st.ID)
	evs := make([]events.New, 0, 1+len(prior.Edits)+len(prior.Removals))
	for _, e := range prior.Edits {
		evs = append(evs, events.New{ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: events.AnnotationEdited, Payload: e})
	}
	for _, r := range prior.Removals {
		evs = append(evs, events.New{ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: events.AnnotationRemoved, Payload: r})
	}
	evs = append(evs, events.New{ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: typ, Payload: payload})
	return c.append(ctx, actor, map[string]int64{stream: st.Version}, evs)
}
