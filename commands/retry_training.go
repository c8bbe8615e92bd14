package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// RetryTraining re-queues a failed model with the same id and selection; its
// dataset is rebuilt for the new attempt.
func (c *Commands) RetryTraining(ctx context.Context, actor Actor, modelID string) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		st, err := c.loadModel(ctx, actor.UserID, modelID)
		if err != nil {
			return Result{}, err
		}
		p, err := rewardmodels.DecideRetry(st)
		if err != nil {
			return Result{}, err
		}
		p.FeedbackPlan = c.feedbackPlan(st.Config)
		return c.appendToModel(ctx, actor, st, events.RewardModelRetried, p)
	})
}
