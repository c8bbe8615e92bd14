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
	r, err := c.onEvaluator(ctx, Actor{}, func(s evaluator.State) (string, any, error) {
		cand, err := candidateOrLatest(&s, id)
		if err != nil {
			return "", nil, err
		}
		ev, rep, err := s.DecideRelease(cand, p, by)
		out.Report = rep
		if err != nil {
			return "", nil, err
		}
		out.Release = ev
		return events.EvaluatorReleased, ev, nil
	})
	out.Result = r
	return out, err
}
