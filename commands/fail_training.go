package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// FailTraining is a worker's failure report; msg is the end of its log. A
// heartbeat of the same attempt racing with it makes it decide again.
type FailTraining struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Message  string
}

// FailTrainingHandler runs FailTraining.
type FailTrainingHandler struct{ *Streams }

// Handle runs the command.
func (c FailTrainingHandler) Handle(ctx context.Context, cmd FailTraining) (Result, error) {
	return c.onModel(ctx, cmd.ModelID, workerActor(cmd.WorkerID), func(st rewardmodels.State) (string, any, error) {
		p, err := rewardmodels.DecideFail(st, cmd.Attempt, cmd.WorkerID, events.FailureWorkerError, cmd.Message)
		return events.RewardModelTrainingFailed, p, err
	})
}
