package commands

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// RequestCandidate queues a shared-evaluator candidate: its dataset is the
// contributed human supervision of training-side trace groups at the log's
// head (reviewed comparisons, explicit step ratings, user corrections of
// traces that contribute now; never an evaluator prediction), stored in the
// blob store with its digest; it is tested on the latest frozen benchmark
// against the live release. The dispatch projection hands it to the worker
// tier.
// It is what `critic evaluator train` asks.
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

// RequestCandidateHandler runs RequestCandidate.
type RequestCandidateHandler struct{ *Streams }

func (c RequestCandidateHandler) Handle(ctx context.Context, cmd RequestCandidate) (RequestCandidateResult, error) {
	cmd.BaseModel = cmp.Or(cmd.BaseModel, rewardmodels.DefaultBaseModel)
	cmd.Epochs = cmp.Or(cmd.Epochs, 1)
	if cmd.Epochs < 1 || cmd.Epochs > 100 {
		return RequestCandidateResult{}, domain.Invalid("epochs must be from 1 to 100, got %d", cmd.Epochs)
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
		p := events.EvaluatorCandidateRequestedV1{CandidateID: id, BaseModel: cmd.BaseModel, Epochs: cmd.Epochs, AsOfSeq: head,
			BenchmarkVersion: b.Version, DatasetKey: key, DatasetSHA256: hex.EncodeToString(sum[:]), NumPairs: len(pairs),
			PairSources: sources, SourceTraces: len(traces), Owners: len(owners), IncumbentRelease: s.Live,
			ArtifactKey: jobs.EvaluatorArtifactKey(id), RequestedBy: cmd.Operator, ErasedItems: erased}
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
