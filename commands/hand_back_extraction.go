package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// HandBackExtraction returns the holder's running extraction to the queue
// (the worker is stopping); its findings stay and the dispatch projection
// publishes the job again.
type HandBackExtraction struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Reason   string
}

// HandBackExtractionHandler runs HandBackExtraction.
type HandBackExtractionHandler struct{ *Streams }

// Handle runs the command.
func (c HandBackExtractionHandler) Handle(ctx context.Context, cmd HandBackExtraction) (Result, error) {
	return c.onModel(ctx, cmd.ModelID, workerActor(cmd.WorkerID), func(st rewardmodels.State) (string, any, error) {
		p, err := rewardmodels.DecideExtractionHandBack(st, cmd.Attempt, cmd.WorkerID, cmd.Reason)
		return events.RewardModelExtractionRequeued, p, err
	})
}
