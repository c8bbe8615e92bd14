package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// RequestCandidate is the input of `critic evaluator train`.
type RequestCandidate struct {
	BaseModel string // default Qwen/Qwen3-0.6B (no pretrained evaluator ships)
	Epochs    int    // default 1
	Operator  string
}

// RequestCandidateResult is the queued candidate.
type RequestCandidateResult struct {
	Result
	Candidate events.EvaluatorCandidateRequestedV1
}

// RequestCandidate queues a shared-evaluator candidate: its dataset is the
// contributed human supervision of training-side trace groups at the log's
// head (reviewed comparisons, explicit step ratings, user corrections of
// traces that contribute now; never an evaluator prediction), stored in the
// blob store with its digest; it is tested on the latest frozen benchmark
// against the live release. The dispatch projection hands it to the worker
// tier.
func (c *Commands) RequestCandidate(ctx context.Context, in RequestCandidate) (RequestCandidateResult, error) {
	if in.BaseModel == "" {
		in.BaseModel = rewardmodels.DefaultBaseModel
	}
	if in.Epochs == 0 {
		in.Epochs = 1
	}
	if in.Epochs < 1 || in.Epochs > 100 {
		return RequestCandidateResult{}, domain.Invalid("epochs must be from 1 to 100, got %d", in.Epochs)
	}
	var out RequestCandidateResult
	r, err := retryOnConflict(func() (Result, error) {
		s, err := c.EvaluatorState(ctx)
		if err != nil {
			return Result{}, err
		}
		head, err := c.store.Head(ctx)
		if err != nil {
			return Result{}, err
		}
		pairs, err := c.CandidateDatasetAsOf(ctx, head)
		if err != nil {
			return Result{}, err
		}
		if err := s.DecideRequest(len(pairs)); err != nil {
			return Result{}, err
		}
		b, erased, err := c.benchmarkText(ctx, s.Benchmarks[len(s.Benchmarks)-1])
		if err != nil {
			return Result{}, err
		}
		id := newID()
		ds := CandidateJobDataset(id, b, pairs)
		raw, err := json.Marshal(ds)
		if err != nil {
			return Result{}, err
		}
		key := jobs.EvaluatorDatasetKey(id)
		if err := c.store.Blobs().Put(ctx, key, raw); err != nil {
			return Result{}, fmt.Errorf("store the candidate dataset: %w", err)
		}
		sum := sha256.Sum256(raw)
		sources, traces, owners := map[string]int{}, map[string]bool{}, map[string]bool{}
		for _, p := range pairs {
			sources[p.Source]++
			traces[p.TraceID] = true
			owners[p.OwnerID] = true
		}
		p := events.EvaluatorCandidateRequestedV1{CandidateID: id, BaseModel: in.BaseModel, Epochs: in.Epochs, AsOfSeq: head,
			BenchmarkVersion: b.Version, DatasetKey: key, DatasetSHA256: hex.EncodeToString(sum[:]), NumPairs: len(pairs),
			PairSources: sources, SourceTraces: len(traces), Owners: len(owners), IncumbentRelease: s.Live,
			ArtifactKey: jobs.EvaluatorArtifactKey(id), RequestedBy: in.Operator, ErasedItems: erased}
		if live := s.LiveRelease(); live != nil {
			p.IncumbentArtifactKey = live.ArtifactKey
		}
		out.Candidate = p
		return c.appendEvaluator(ctx, Actor{}, s, events.EvaluatorCandidateRequested, p)
	})
	if err != nil {
		return RequestCandidateResult{}, err
	}
	out.Result = r
	return out, nil
}

// ScheduledCandidate is one tick of CRITIC_EVALUATOR_TRAIN_EVERY: it queues
// a candidate on base unless one is still queued or running, no benchmark
// is frozen, the contributed data has fewer than 2 pairs, or nothing
// changed since the last candidate (the same pairs on the same benchmark:
// its dataset digest would be the same). skip says why nothing was queued.
func (c *Commands) ScheduledCandidate(ctx context.Context, base string) (res RequestCandidateResult, skip string, err error) {
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
	res, err = c.RequestCandidate(ctx, RequestCandidate{BaseModel: base, Operator: "schedule"})
	return res, "", err
}
