package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/criticml/critic/domain/evaluator"
)

// ScheduledCandidate is one tick of CRITIC_EVALUATOR_TRAIN_EVERY: it queues
// a candidate on base unless one is still queued or running, no benchmark
// is frozen, the contributed data has fewer than 2 pairs, or nothing
// changed since the last candidate (the same pairs on the same benchmark:
// its dataset digest would be the same). skip says why nothing was queued.
type ScheduledCandidate struct {
	Base string
}

// ScheduledCandidateHandler runs ScheduledCandidate.
type ScheduledCandidateHandler struct{ *Streams }

func (c ScheduledCandidateHandler) Handle(ctx context.Context, cmd ScheduledCandidate) (res RequestCandidateResult, skip string, err error) {
	s, err := c.EvaluatorState(ctx)
	if err != nil {
		return res, "", err
	}
	for _, cand := range s.Candidates {
		if cand.Status == evaluator.CandidateQueued || cand.Status == evaluator.CandidateRunning {
			return res, fmt.Sprintf("candidate %s is still %s", cand.CandidateID, cand.Status), nil
		}
	}
	if len(s.Benchmarks) == 0 {
		return res, "no benchmark is frozen yet (critic evaluator benchmark freeze)", nil
	}
	head, err := c.store.Head(ctx)
	if err != nil {
		return res, "", err
	}
	pairs, err := c.CandidateDatasetAsOf(ctx, head)
	if err != nil {
		return res, "", err
	}
	if len(pairs) < 2 {
		return res, fmt.Sprintf("the contributed training data has %d usable pair(s); a candidate needs 2", len(pairs)), nil
	}
	if n := len(s.Candidates); n > 0 {
		last := s.Candidates[n-1]
		b, _, err := c.benchmarkText(ctx, s.Benchmarks[len(s.Benchmarks)-1])
		if err != nil {
			return res, "", err
		}
		raw, err := json.Marshal(CandidateJobDataset(last.CandidateID, b, pairs))
		if err != nil {
			return res, "", err
		}
		if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) == last.DatasetSHA256 {
			return res, fmt.Sprintf("no new contributed supervision since candidate %s", last.CandidateID), nil
		}
	}
	res, err = RequestCandidateHandler{c.Streams}.Handle(ctx, RequestCandidate{BaseModel: cmd.Base, Operator: "schedule"})
	return res, "", err
}
