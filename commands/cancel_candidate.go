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
func (c *Commands) CancelCandidate(ctx context.Context, id, by string) (Result, error) {
	return c.onEvaluator(ctx, Actor{}, func(s evaluator.State) (string, any, error) {
		cand := s.Candidate(id)
		if cand == nil {
			return "", nil, &domain.NotFoundError{What: "evaluator candidate", ID: id}
		}
		if cand.Status != evaluator.CandidateQueued && cand.Status != evaluator.CandidateRunning {
			return "", nil, &domain.ConflictError{Code: "candidate_finished", Message: fmt.Sprintf("candidate %s is %s: only a queued or running candidate can be cancelled", id, cand.Status)}
		}
		return events.EvaluatorCandidateFailed,
			events.EvaluatorCandidateFailedV1{CandidateID: id, Error: "cancelled by " + by}, nil
	})
}
