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
type ReleaseCandidate struct {
	ID     string
	Policy evaluator.Policy
	By     string
}

// ReleaseCandidateHandler runs ReleaseCandidate.
type ReleaseCandidateHandler struct{ *Streams }

func (c ReleaseCandidateHandler) Handle(ctx context.Context, cmd ReleaseCandidate) (ReleaseResult, error) {
	var out ReleaseResult
	r, err := c.onEvaluator(ctx, Actor{}, func(s evaluator.State) (string, any, error) {
		cand, err := candidateOrLatest(&s, cmd.ID)
		if err != nil {
			return "", nil, err
		}
		ev, rep, err := s.DecideRelease(cand, cmd.Policy, cmd.By)
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
