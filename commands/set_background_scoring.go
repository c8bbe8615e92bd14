package commands

import (
	"context"

	"github.com/criticml/critic/domain/rewardmodels"
)

// SetBackgroundScoring pauses or resumes the caller's ready model's
// background scoring (PUT /reward-models/{id}/background-scoring): 404 for
// a model that is not the caller's, 409 model_not_ready before it succeeded.
type SetBackgroundScoring struct {
	Actor   Actor
	ModelID string
	Paused  bool
}

// SetBackgroundScoringHandler runs SetBackgroundScoring.
type SetBackgroundScoringHandler struct{ *Streams }

func (c SetBackgroundScoringHandler) Handle(ctx context.Context, cmd SetBackgroundScoring) (Result, error) {
	if _, err := c.loadModel(ctx, cmd.Actor.UserID, cmd.ModelID); err != nil {
		return Result{}, err
	}
	return c.onModel(ctx, cmd.ModelID, cmd.Actor, func(m rewardmodels.State) (string, any, error) {
		return rewardmodels.DecidePauseScoring(m, cmd.Paused)
	})
}
