package commands

import (
	"context"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
)

// ReleaseResult is a release.
type ReleaseResult struct {
	Result
	Release events.EvaluatorReleasedV1
	Report  evaluator.Report
}

// ReleaseCandidate is `critic evaluator release`: the candidate (default:
// the last trained) becomes the live evaluator if it passes the gates
// under p against the live release; otherwise a ConflictError names every
// failed gate and nothing is appended. The report and policy are recorded.
func (c *Commands) ReleaseCandidate(ctx context.Context, id string, p evaluator.Policy, by string) (ReleaseResult, error) {
	var out ReleaseResult
	r, err := retryOnConflict(func() (Result, error) {
		s, err := c.EvaluatorState(ctx)
		if err != nil {
			return Result{}, err
		}
		cand, err := candidateOrLatest(&s, id)
		if err != nil {
			return Result{}, err
		}
		ev, rep, err := s.DecideRelease(cand, p, by)
		out.Report = rep
		if err != nil {
			return Result{}, err
		}
		out.Release = ev
		return c.appendEvaluator(ctx, Actor{}, s, events.EvaluatorReleased, ev)
	})
	out.Result = r
	return out, err
}
