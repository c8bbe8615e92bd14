package commands

import (
	"context"
	"time"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ExpireLease handles a running model whose worker stopped heartbeating:
// the attempt goes back to the queue (another worker retries it), or fails
// once lease.MaxLostRuns runs were lost. It is safe to call for any
// model: one with a live lease is left alone, and a heartbeat racing with
// it makes it decide again on the new state (the heartbeat may have renewed
// the lease). Requeued says which of the two happened.
type ExpireLease struct {
	ModelID string
	Now     time.Time
}

// ExpireLeaseHandler runs ExpireLease.
type ExpireLeaseHandler struct{ *Streams }

// Handle runs the command.
func (c ExpireLeaseHandler) Handle(ctx context.Context, cmd ExpireLease) (Result, error) {
	return c.onModel(ctx, cmd.ModelID, Actor{}, func(st rewardmodels.State) (string, any, error) {
		out, _ := rewardmodels.DecideLeaseExpiry(st, cmd.Now)
		return expiry(events.RewardModelTrainingRequeued, out.Requeue, events.RewardModelTrainingFailed, out.Fail)
	})
}
