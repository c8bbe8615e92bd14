package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// RetryTraining re-queues a failed model with the same id and selection; its
// dataset is rebuilt for the new attempt.
type RetryTraining struct {
	Actor   Actor
	ModelID string
}

// RetryTrainingHandler runs RetryTraining.
type RetryTrainingHandler struct {
	*Streams
	feedback events.FeedbackPlan
}

func (c RetryTrainingHandler) Handle(ctx context.Context, cmd RetryTraining) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		st, err := c.loadModel(ctx, cmd.Actor.UserID, cmd.ModelID)
		if err != nil {
			return Result{}, err
		}
		p, err := rewardmodels.DecideRetry(st)
		if err != nil {
			return Result{}, err
		}
		p.FeedbackPlan = feedbackPlan(c.feedback, st.Config)
		return c.appendToModel(ctx, cmd.Actor, st, events.RewardModelRetried, p)
	})
}
