package commands

import (
	"context"
	"time"

	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// handBackCandidate returns the holder's running candidate to the queue
// (the worker is stopping); the dispatch projection publishes its job
// again and the next free worker trains it from the start.
func (c *Streams) handBackCandidate(ctx context.Context, workerID, id, reason string) (Result, error) {
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
func (c *Streams) ExpiredCandidateLeases(ctx context.Context, now time.Time, fallback time.Duration) ([]string, error) {
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

var _ = onKind(jobs.KindEvaluatorTrain, (*Streams).candidateJob)

// candidateJob is KindEvaluatorTrain: a shared-evaluator candidate
// (only a queued one can be claimed) under a lease; its result is the
// trained report with the benchmark margins the release gates read.
func (c *Streams) candidateJob() jobActions {
	type call[B any] = jobCall[jobs.EvaluatorTrainJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return ClaimCandidateHandler{c}.Handle(ctx, ClaimCandidate{WorkerID: r.Worker, ID: r.ID, Lease: r.Lease})
		}),
		jobs.Beat: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(CandidateHeartbeatHandler{c}.Handle(ctx, CandidateHeartbeat{WorkerID: r.Worker, ID: r.ID}))
		}),
		jobs.Finish: onJob(func(ctx context.Context, r call[jobs.EvaluatorCandidateSucceeded]) (any, error) {
			return jobAck(CompleteCandidateHandler{c}.Handle(ctx, CompleteCandidate{WorkerID: r.Worker, ID: r.ID, Result: r.Body}))
		}),
		jobs.Fail: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(FailCandidateHandler{c}.Handle(ctx, FailCandidate{WorkerID: r.Worker, ID: r.ID, Message: r.Error}))
		}),
		jobs.HandBack: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(c.handBackCandidate(ctx, r.Worker, r.ID, r.Reason))
		}),
	}
}
