package commands

import (
	"context"
	"time"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ExpireGepaLease handles a running run whose worker stopped heartbeating
// (the stream decides; the read model only nominates): it goes back to the
// queue for the next free worker, or fails once MaxLostRuns runs were lost.
type ExpireGepaLease struct {
	RunID string
	Now   time.Time
}

// ExpireGepaLeaseHandler runs ExpireGepaLease.
type ExpireGepaLeaseHandler struct{ *Streams }

// Handle runs the command.
func (c ExpireGepaLeaseHandler) Handle(ctx context.Context, cmd ExpireGepaLease) (Result, error) {
	return c.onGepa(ctx, cmd.RunID, Actor{}, func(st rewardmodels.GepaState) (string, any, error) {
		out, _ := rewardmodels.DecideGepaLeaseExpiry(st, cmd.RunID, cmd.Now)
		return expiry(events.GepaRunRequeued, out.Requeue, events.GepaRunFailed, out.Fail)
	})
}
