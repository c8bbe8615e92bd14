package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// Heartbeat renews the lease of the worker holding the attempt.
type Heartbeat struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Progress events.Progress
}

// HeartbeatHandler runs Heartbeat.
type HeartbeatHandler struct{ *Streams }

// Handle runs the command.
func (c HeartbeatHandler) Handle(ctx context.Context, cmd Heartbeat) (Result, error) {
	return c.onModel(ctx, cmd.ModelID, workerActor(cmd.WorkerID), func(st rewardmodels.State) (string, any, error) {
		ev, err := rewardmodels.DecideHeartbeat(st, cmd.Attempt, cmd.WorkerID, cmd.Progress)
		return events.RewardModelHeartbeat, ev, err
	})
}
