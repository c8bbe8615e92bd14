package commands

import (
	"context"

	"github.com/criticml/critic/domain/agreement"
	"github.com/criticml/critic/domain/events"
)

// SetReviewOverlap sets how many members should judge each review queue
// item of the account (agreement.CheckOverlap: 1–10).
type SetReviewOverlap struct {
	Actor   Actor
	Overlap int
}

// SetReviewOverlapHandler runs SetReviewOverlap.
type SetReviewOverlapHandler struct{ *Streams }

func (c SetReviewOverlapHandler) Handle(ctx context.Context, cmd SetReviewOverlap) (Result, error) {
	if err := agreement.CheckOverlap(cmd.Overlap); err != nil {
		return Result{}, err
	}
	return c.appendAccountSetting(ctx, cmd.Actor, cmd.Actor.UserID, events.UserReviewOverlapSet,
		events.UserReviewOverlapSetV1{UserID: cmd.Actor.UserID, Overlap: cmd.Overlap})
}
