package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/agreement"
	"github.com/criticml/critic/domain/events"
)

// SetReviewOverlap sets how many members should judge each review queue
// item of the account (agreement.CheckOverlap: 1–10).
func (c *Commands) SetReviewOverlap(ctx context.Context, actor Actor, overlap int) (Result, error) {
	if err := agreement.CheckOverlap(overlap); err != nil {
		return Result{}, err
	}
	stream := events.UserStream(actor.UserID)
	loaded, err := c.store.LoadStreams(ctx, []string{stream})
	if err != nil {
		return Result{}, err
	}
	evs := loaded[stream]
	if len(evs) == 0 {
		return Result{}, domain.NotFound("user", actor.UserID)
	}
	return c.append(ctx, actor, map[string]int64{stream: evs[len(evs)-1].Version}, []events.New{{
		ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: events.UserReviewOverlapSet,
		Payload: events.UserReviewOverlapSetV1{UserID: actor.UserID, Overlap: overlap},
	}})
}
