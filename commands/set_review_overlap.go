package commands

import (
	"context"

	"github.com/criticml/critic/domain/agreement"
	"github.com/criticml/critic/domain/events"
)

// SetReviewOverlap sets how many members should judge each review queue
// item of the account (agreement.CheckOverlap: 1–10).
func (c *Commands) SetReviewOverlap(ctx context.Context, actor Actor, overlap int) (Result, error) {
	if err := agreement.CheckOverlap(overlap); err != nil {
		return Result{}, err
	}
	return c.appendAccountSetting(ctx, actor, actor.UserID, events.UserReviewOverlapSet,
		events.UserReviewOverlapSetV1{UserID: actor.UserID, Overlap: overlap})
}
