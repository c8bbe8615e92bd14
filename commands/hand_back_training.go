package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// HandBackTraining returns a running attempt to the queue at its worker's
// request (the worker is stopping): another worker trains it from the start.
type HandBackTraining struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Reason   string
}

// HandBackTrainingHandler runs HandBackTraining.
type HandBackTrainingHandler struct{ *Streams }

// Handle runs the command.
func (c HandBackTrainingHandler) Handle(ctx context.Context, cmd HandBackTraining) (Result, error) {
	return c.onModel(ctx, cmd.ModelID, workerActor(cmd.WorkerID), func(st rewardmodels.State) (string, any, error) {
		p, err := rewardmodels.DecideHandBack(st, cmd.Attempt, cmd.WorkerID, cmd.Reason)
		return events.RewardModelTrainingRequeued, p, err
	})
}
