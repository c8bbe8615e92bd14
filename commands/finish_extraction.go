package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// FinishExtraction ends the holder's extraction. With errMsg (malformed
// answers, an unreachable provider) the attempt fails in the same append;
// otherwise the dispatcher builds the dataset next.
type FinishExtraction struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Error    string
}

// FinishExtractionHandler runs FinishExtraction.
type FinishExtractionHandler struct{ *Streams }

// Handle runs the command.
func (c FinishExtractionHandler) Handle(ctx context.Context, cmd FinishExtraction) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		st, err := c.loadModel(ctx, "", cmd.ModelID)
		if err != nil {
			return Result{}, err
		}
		fin, fail, err := rewardmodels.DecideFinishExtraction(st, cmd.Attempt, cmd.WorkerID, cmd.Error)
		if err != nil {
			return Result{}, err
		}
		var extra []events.New
		if fail != nil {
			extra = append(extra, events.New{ID: newID(), Stream: events.RewardModelStream(st.ID), OwnerID: st.OwnerID,
				Type: events.RewardModelTrainingFailed, Payload: *fail})
		}
		return c.appendToModel(ctx, workerActor(cmd.WorkerID), st, events.RewardModelExtractionFinished, fin, extra...)
	})
}
