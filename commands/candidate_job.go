package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// ClaimCandidate starts a queued candidate for one worker under lease;
// anything else (a duplicate delivery, another worker was first) is a
// ConflictError.
func (c *Commands) ClaimCandidate(ctx context.Context, workerID, id string, lease time.Duration) (jobs.EvaluatorCandidateClaim, error) {
	var claim jobs.EvaluatorCandidateClaim
	_, err := retryOnConflict(func() (Result, error) {
		s, err := c.EvaluatorState(ctx)
		if err != nil {
			return Result{}, err
		}
		cand, err := s.DecideClaim(id)
		if err != nil {
			return Result{}, err
		}
		secs := int(lease / time.Second)
		claim = jobs.EvaluatorCandidateClaim{CandidateID: id, BaseModel: cand.BaseModel, Epochs: cand.Epochs, DatasetKey: cand.DatasetKey,
			ArtifactKey: cand.ArtifactKey, IncumbentArtifactKey: cand.IncumbentArtifactKey, LeaseSeconds: secs}
		return c.appendEvaluator(ctx, workerActor(workerID), s, events.EvaluatorCandidateStarted,
			events.EvaluatorCandidateStartedV1{CandidateID: id, WorkerID: workerID, LeaseSeconds: secs})
	})
	return claim, err
}

// CompleteCandidate is a worker's success report: the margins must cover
// the candidate's benchmark exactly (and the incumbent's when there is
// one), and the checkpoint must be in the blob store at the key the API
// chose.
func (c *Commands) CompleteCandidate(ctx context.Context, workerID, id string, in jobs.EvaluatorCandidateSucceeded) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		s, err := c.EvaluatorState(ctx)
		if err != nil {
			return Result{}, err
		}
		cand, err := s.DecideReport(id, workerID)
		if err != nil {
			return Result{}, err
		}
		b := s.Benchmark(cand.BenchmarkVersion)
		if b == nil {
			return Result{}, fmt.Errorf("candidate %s names benchmark version %d, which the stream does not hold", id, cand.BenchmarkVersion)
		}
		if err := evaluator.CheckMargins(b, cand, in.CandidateMargins, in.IncumbentMargins); err != nil {
			return Result{}, err
		}
		if len(in.Metrics) == 0 || !json.Valid(in.Metrics) {
			return Result{}, domain.Invalid("metrics must be a JSON object")
		}
		if len(in.ActionRewardStats) == 0 || string(in.ActionRewardStats) == "null" || !json.Valid(in.ActionRewardStats) {
			return Result{}, domain.Invalid("action_reward_stats is required: the evaluator scores actions, and credit needs the training statistics")
		}
		if ok, err := c.store.Blobs().Exists(ctx, cand.ArtifactKey); err != nil {
			return Result{}, err
		} else if !ok {
			return Result{}, domain.Invalid("no checkpoint at %s: upload it before reporting success", cand.ArtifactKey)
		}
		inc := in.IncumbentMargins
		if inc == nil {
			inc = map[string]float64{}
		}
		return c.appendEvaluator(ctx, workerActor(workerID), s, events.EvaluatorCandidateTrained, events.EvaluatorCandidateTrainedV1{
			CandidateID: id, WorkerID: workerID, ArtifactKey: cand.ArtifactKey, Metrics: in.Metrics, ActionRewardStats: in.ActionRewardStats,
			CandidateMargins: in.CandidateMargins, IncumbentMargins: inc})
	})
}

// FailCandidate is a worker's failure report; msg is the end of its log.
func (c *Commands) FailCandidate(ctx context.Context, workerID, id, msg string) (Result, error) {
	if strings.TrimSpace(msg) == "" {
		msg = "the worker reported a failure without a log"
	}
	if r := []rune(msg); len(r) > 2000 {
		msg = string(r[len(r)-2000:])
	}
	return c.onEvaluator(ctx, workerActor(workerID), func(s evaluator.State) (string, any, error) {
		_, err := s.DecideReport(id, workerID)
		return events.EvaluatorCandidateFailed, events.EvaluatorCandidateFailedV1{CandidateID: id, WorkerID: workerID, Error: msg}, err
	})
}

// handBackCandidate returns the holder's running candidate to the queue
// (the worker is stopping); the dispatch projection publishes its job
// again and the next free worker trains it from the start.
func (c *Commands) handBackCandidate(ctx context.Context, workerID, id, reason string) (Result, error) {
	if reason == "" {
		reason = "worker " + workerID + " stopped"
	}
	if r := []rune(reason); len(r) > 500 {
		reason = string(r[:500])
	}
	return c.onEvaluator(ctx, workerActor(workerID), func(s evaluator.State) (string, any, error) {
		_, err := s.DecideReport(id, workerID)
		return events.EvaluatorCandidateRequeued, events.EvaluatorCandidateRequeuedV1{CandidateID: id, WorkerID: workerID, Reason: events.RequeueHandedBack, Detail: reason}, err
	})
}

// CandidateHeartbeat renews the holder's lease on a running candidate; a
// worker that no longer holds it (its lease expired, it was cancelled) is
// refused with a ConflictError and stops.
func (c *Commands) CandidateHeartbeat(ctx context.Context, workerID, id string) (Result, error) {
	return c.onEvaluator(ctx, workerActor(workerID), func(s evaluator.State) (string, any, error) {
		_, err := s.DecideReport(id, workerID)
		return events.EvaluatorCandidateHeartbeat, events.EvaluatorCandidateHeartbeatV1{CandidateID: id, WorkerID: workerID}, err
	})
}

// ExpireCandidateLease handles a running candidate whose worker stopped
// heartbeating (the stream decides): it goes back to the queue for the
// next free worker (evaluator.candidate_requeued, reason lease_expired),
// or fails once lease.MaxLostRuns runs were lost. fallback is the
// lease of a claim recorded before candidates had one. Nothing is appended
// while the lease runs.
func (c *Commands) ExpireCandidateLease(ctx context.Context, id string, now time.Time, fallback time.Duration) (Result, error) {
	return c.onEvaluator(ctx, Actor{}, func(s evaluator.State) (string, any, error) {
		out, _ := s.DecideLeaseExpiry(id, now, fallback)
		return expiry(events.EvaluatorCandidateRequeued, out.Requeue, events.EvaluatorCandidateFailed, out.Fail)
	})
}

// candidateLifecycle is every event type that moves a candidate's status
// or lease: the lease sweep folds only these, not the benchmarks (their
// items are the bulk of the evaluator stream).
var candidateLifecycle = []string{events.EvaluatorCandidateRequested, events.EvaluatorCandidateStarted,
	events.EvaluatorCandidateHeartbeat, events.EvaluatorCandidateRequeued, events.EvaluatorCandidateTrained,
	events.EvaluatorCandidateFailed}

// ExpiredCandidateLeases nominates the running candidates whose lease ran
// out before now (fallback: the lease of a claim that recorded none), for
// ExpireCandidateLease to decide on the whole stream.
// It folds the log because the read model keeps no candidate leases.
func (c *Commands) ExpiredCandidateLeases(ctx context.Context, now time.Time, fallback time.Duration) ([]string, error) {
	evs, err := c.store.LoadStreamTypes(ctx, events.EvaluatorStream, candidateLifecycle)
	if err != nil {
		return nil, err
	}
	var s evaluator.State
	for _, e := range evs {
		s.Apply(e)
	}
	var ids []string
	for _, id := range s.Running() {
		if _, expired := s.DecideLeaseExpiry(id, now, fallback); expired {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

var _ = onKind(jobs.KindEvaluatorTrain, (*Commands).candidateJob)

// candidateJob is KindEvaluatorTrain: a shared-evaluator candidate
// (only a queued one can be claimed) under a lease; its result is the
// trained report with the benchmark margins the release gates read.
func (c *Commands) candidateJob() jobActions {
	type call[B any] = jobCall[jobs.EvaluatorTrainJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return c.ClaimCandidate(ctx, r.Worker, r.ID, r.Lease)
		}),
		jobs.Beat: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(c.CandidateHeartbeat(ctx, r.Worker, r.ID))
		}),
		jobs.Finish: onJob(func(ctx context.Context, r call[jobs.EvaluatorCandidateSucceeded]) (any, error) {
			return jobAck(c.CompleteCandidate(ctx, r.Worker, r.ID, r.Body))
		}),
		jobs.Fail: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(c.FailCandidate(ctx, r.Worker, r.ID, r.Error))
		}),
		jobs.HandBack: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(c.handBackCandidate(ctx, r.Worker, r.ID, r.Reason))
		}),
	}
}
