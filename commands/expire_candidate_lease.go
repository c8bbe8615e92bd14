package commands

import (
	"context"
	"time"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
)

// ExpireCandidateLease handles a running candidate whose worker stopped
// heartbeating (the stream decides): it goes back to the queue for the
// next free worker (evaluator.candidate_requeued, reason lease_expired),
// or fails once lease.MaxLostRuns runs were lost. fallback is the
// lease of a claim recorded before candidates had one. Nothing is appended
// while the lease runs.
type ExpireCandidateLease struct {
	ID       string
	Now      time.Time
	Fallback time.Duration
}

// ExpireCandidateLeaseHandler runs ExpireCandidateLease.
type ExpireCandidateLeaseHandler struct{ *Streams }

// Handle runs the command.
func (c ExpireCandidateLeaseHandler) Handle(ctx context.Context, cmd ExpireCandidateLease) (Result, error) {
	return c.onEvaluator(ctx, Actor{}, func(s evaluator.State) (string, any, error) {
		out, _ := s.DecideLeaseExpiry(cmd.ID, cmd.Now, cmd.Fallback)
		return expiry(events.EvaluatorCandidateRequeued, out.Requeue, events.EvaluatorCandidateFailed, out.Fail)
	})
}
