package commands

import (
	"context"
	"fmt"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
)

// CancelCandidate is `critic evaluator cancel ID`: an operator fails a
// queued or running candidate (one not worth finishing; a dead worker's
// candidate is requeued on lease expiry without it), so the schedule and
// reports move on. A worker still
// running it is refused when it reports.
type CancelCandidate struct {
	ID string
	By string
}

// CancelCandidateHandler runs CancelCandidate.
type CancelCandidateHandler struct{ *Streams }

func (c CancelCandidateHandler) Handle(ctx context.Context, cmd CancelCandidate) (Result, error) {
	return c.onEvaluator(ctx, Actor{}, func(s evaluator.State) (string, any, error) {
		cand := s.Candidate(cmd.ID)
		if cand == nil {
			return "", nil, &domain.NotFoundError{What: "evaluator candidate", ID: cmd.ID}
		}
		if cand.Status != evaluator.CandidateQueued && cand.Status != evaluator.CandidateRunning {
			return "", nil, &domain.ConflictError{Code: "candidate_finished", Message: fmt.Sprintf("candidate %s is %s: only a queued or running candidate can be cancelled", cmd.ID, cand.Status)}
		}
		return events.EvaluatorCandidateFailed,
			events.EvaluatorCandidateFailedV1{CandidateID: cmd.ID, Error: "cancelled by " + cmd.By}, nil
	})
}
