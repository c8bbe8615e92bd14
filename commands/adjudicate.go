package commands

import (
	"cmp"
	"context"
	"encoding/json"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

// AdjudicateInput is an admin's final judgment of a target the members
// disagree on (issue 36): what POST /traces/{id}/adjudications asks.
type AdjudicateInput struct {
	TraceID     string
	StepID      string
	Rating      *int
	CriterionID string
	Value       json.RawMessage
	Reason      string
	// By is the adjudicating member ("" = the actor's member).
	By string
}

// AdjudicateResult carries the adjudication's id and what was recorded.
type AdjudicateResult struct {
	Result
	Adjudication events.AnnotationAdjudicatedV1
}

// Adjudicate checks the judgment against the trace as its stream
// describes it (traces.DecideAdjudicate) and appends
// annotation.adjudicated to that stream; training then counts it instead
// of the members' ratings of the target.
type Adjudicate struct {
	Actor Actor
	Input AdjudicateInput
}

// AdjudicateHandler runs Adjudicate.
type AdjudicateHandler struct{ *Streams }

func (c AdjudicateHandler) Handle(ctx context.Context, cmd Adjudicate) (AdjudicateResult, error) {
	in := cmd.Input
	id := newID()
	in.By = cmp.Or(in.By, cmd.Actor.Member())
	var p events.AnnotationAdjudicatedV1
	r, err := c.onTrace(ctx, cmd.Actor, in.TraceID, func(st traces.State) (string, any, error) {
		dec := traces.AdjudicateInput{AdjudicationID: id, StepID: in.StepID, Rating: in.Rating, CriterionID: in.CriterionID,
			Value: in.Value, Reason: in.Reason, By: in.By}
		if in.CriterionID != "" {
			cs, err := c.criteria(ctx, cmd.Actor.UserID)
			if err != nil {
				return "", nil, err
			}
			dec.Criterion, _ = cs.Get(in.CriterionID)
		}
		var err error
		p, err = traces.DecideAdjudicate(st, dec)
		return events.AnnotationAdjudicated, p, err
	})
	return AdjudicateResult{Result: r, Adjudication: p}, err
}
