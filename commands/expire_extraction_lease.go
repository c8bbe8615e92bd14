package commands

import (
	"context"
	"time"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ExpireExtractionLease requeues a running extraction whose worker stopped
// renewing its lease before now (Postgres's clock, as for training); the
// dispatch projection then publishes the job again. The attempt's
// MaxLostRuns-th lost run fails the model instead. A live lease or an
// extraction that is not running appends nothing (an empty Result).
type ExpireExtractionLease struct {
	ModelID string
	Now     time.Time
}

// ExpireExtractionLeaseHandler runs ExpireExtractionLease.
type ExpireExtractionLeaseHandler struct{ *Streams }

// Handle runs the command.
func (c ExpireExtractionLeaseHandler) Handle(ctx context.Context, cmd ExpireExtractionLease) (Result, error) {
	return c.onModel(ctx, cmd.ModelID, Actor{}, func(st rewardmodels.State) (string, any, error) {
		requeue, fail, _ := rewardmodels.DecideExtractionLeaseExpiry(st, cmd.Now)
		return expiry(events.RewardModelExtractionRequeued, requeue, events.RewardModelTrainingFailed, fail)
	})
}
