package commands

import (
	"context"
	"strings"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
)

// FailCandidate is a worker's failure report; msg is the end of its log.
type FailCandidate struct {
	WorkerID string
	ID       string
	Message  string
}

// FailCandidateHandler runs FailCandidate.
type FailCandidateHandler struct{ *Streams }

// Handle runs the command.
func (c FailCandidateHandler) Handle(ctx context.Context, cmd FailCandidate) (Result, error) {
	if strings.TrimSpace(cmd.Message) == "" {
		cmd.Message = "the worker reported a failure without a log"
	}
	if r := []rune(cmd.Message); len(r) > 2000 {
		cmd.Message = string(r[len(r)-2000:])
	}
	return c.onEvaluator(ctx, workerActor(cmd.WorkerID), func(s evaluator.State) (string, any, error) {
		_, err := s.DecideReport(cmd.ID, cmd.WorkerID)
		return events.EvaluatorCandidateFailed, events.EvaluatorCandidateFailedV1{CandidateID: cmd.ID, WorkerID: cmd.WorkerID, Error: cmd.Message}, err
	})
}
