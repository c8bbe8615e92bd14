package commands

import (
	"context"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
)

// CandidateHeartbeat renews the holder's lease on a running candidate; a
// worker that no longer holds it (its lease expired, it was cancelled) is
// refused with a ConflictError and stops.
type CandidateHeartbeat struct {
	WorkerID string
	ID       string
}

// CandidateHeartbeatHandler runs CandidateHeartbeat.
type CandidateHeartbeatHandler struct{ *Streams }

// Handle runs the command.
func (c CandidateHeartbeatHandler) Handle(ctx context.Context, cmd CandidateHeartbeat) (Result, error) {
	return c.onEvaluator(ctx, workerActor(cmd.WorkerID), func(s evaluator.State) (string, any, error) {
		_, err := s.DecideReport(cmd.ID, cmd.WorkerID)
		return events.EvaluatorCandidateHeartbeat, events.EvaluatorCandidateHeartbeatV1{CandidateID: cmd.ID, WorkerID: cmd.WorkerID}, err
	})
}
