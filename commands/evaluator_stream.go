package commands

import (
	"context"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
)

// EvaluatorState folds the shared evaluator's stream: benchmarks,
// candidates, releases and the live release.
// Every evaluator command decides on it; the read model keeps only the
// releases and benchmarks, not candidates' leases and margins.
func (c *Streams) EvaluatorState(ctx context.Context) (evaluator.State, error) {
	evs, err := c.loadStream(ctx, events.EvaluatorStream)
	if err != nil {
		return evaluator.State{}, err
	}
	var s evaluator.State
	for _, e := range evs {
		s.Apply(e)
	}
	return s, nil
}

func (c *Streams) appendEvaluator(ctx context.Context, actor Actor, s evaluator.State, typ string, payload any) (Result, error) {
	return c.appendEvent(ctx, actor, events.EvaluatorStream, events.SystemOwnerID, s.Version, typ, payload)
}

// candidateOrLatest returns the named candidate, or the last trained one.
func candidateOrLatest(s *evaluator.State, id string) (*evaluator.Candidate, error) {
	if id != "" {
		cand := s.Candidate(id)
		if cand == nil {
			return nil, &domain.NotFoundError{What: "evaluator candidate", ID: id}
		}
		return cand, nil
	}
	cand := s.LatestTrained()
	if cand == nil {
		return nil, &domain.ConflictError{Code: "no_trained_candidate",
			Message: "no shared-evaluator candidate has trained yet: run `critic evaluator train` and a worker (critic worker, or critic run's in-process worker)"}
	}
	return cand, nil
}

// CandidateReport is `critic evaluator report`: the gate report of a
// candidate (default: the last trained) under policy p.
// It folds the evaluator stream (EvaluatorState): the gate's inputs are
// not in the read model.
func (c *Streams) CandidateReport(ctx context.Context, id string, p evaluator.Policy) (*evaluator.Candidate, evaluator.Report, error) {
	s, err := c.EvaluatorState(ctx)
	if err != nil {
		return nil, evaluator.Report{}, err
	}
	cand, err := candidateOrLatest(&s, id)
	if err != nil {
		return nil, evaluator.Report{}, err
	}
	r, err := s.Report(cand, p)
	return cand, r, err
}
