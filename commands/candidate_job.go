package commands

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// ClaimCandidate starts a queued candidate for one worker under lease;
// anything else (a duplicate delivery, another worker was first) is a
// ConflictError.
type ClaimCandidate struct {
	WorkerID string
	ID       string
	Lease    time.Duration
}

// ClaimCandidateHandler runs ClaimCandidate.
type ClaimCandidateHandler struct{ *Streams }

func (c ClaimCandidateHandler) Handle(ctx context.Context, cmd ClaimCandidate) (jobs.EvaluatorCandidateClaim, error) {
	var claim jobs.EvaluatorCandidateClaim
	_, err := c.onEvaluator(ctx, WorkerActor(cmd.WorkerID), func(s evaluator.State) (string, any, error) {
		cand, err := s.DecideClaim(cmd.ID)
		if err != nil {
			return "", nil, err
		}
		secs := int(cmd.Lease / time.Second)
		claim = jobs.EvaluatorCandidateClaim{CandidateID: cmd.ID, BaseModel: cand.BaseModel, Epochs: cand.Epochs, DatasetKey: cand.DatasetKey,
			ArtifactKey: cand.ArtifactKey, IncumbentArtifactKey: cand.IncumbentArtifactKey, LeaseSeconds: secs}
		return events.EvaluatorCandidateStarted, events.EvaluatorCandidateStartedV1{CandidateID: cmd.ID, WorkerID: cmd.WorkerID, LeaseSeconds: secs}, nil
	})
	return claim, err
}

// CompleteCandidate is a worker's success report: the margins must cover
// the candidate's benchmark exactly (and the incumbent's when there is
// one), and the checkpoint must be in the blob store at the key the API
// chose.
type CompleteCandidate struct {
	WorkerID string
	ID       string
	Result   jobs.EvaluatorCandidateSucceeded
}

// CompleteCandidateHandler runs CompleteCandidate.
type CompleteCandidateHandler struct{ *Streams }

func (c CompleteCandidateHandler) Handle(ctx context.Context, cmd CompleteCandidate) (Result, error) {
	in := cmd.Result
	return c.onEvaluator(ctx, WorkerActor(cmd.WorkerID), func(s evaluator.State) (string, any, error) {
		cand, err := s.DecideReport(cmd.ID, cmd.WorkerID)
		if err != nil {
			return "", nil, err
		}
		b := s.Benchmark(cand.BenchmarkVersion)
		if b == nil {
			return "", nil, fmt.Errorf("candidate %s names benchmark version %d, which the stream does not hold", cmd.ID, cand.BenchmarkVersion)
		}
		if err := evaluator.CheckMargins(b, cand, in.CandidateMargins, in.IncumbentMargins); err != nil {
			return "", nil, err
		}
		if len(in.Metrics) == 0 || !json.Valid(in.Metrics) {
			return "", nil, domain.Invalid("metrics must be a JSON object")
		}
		if len(in.ActionRewardStats) == 0 || string(in.ActionRewardStats) == "null" || !json.Valid(in.ActionRewardStats) {
			return "", nil, domain.Invalid("action_reward_stats is required: the evaluator scores actions, and credit needs the training statistics")
		}
		if ok, err := c.store.Blobs().Exists(ctx, cand.ArtifactKey); err != nil {
			return "", nil, err
		} else if !ok {
			return "", nil, domain.Invalid("no checkpoint at %s: upload it before reporting success", cand.ArtifactKey)
		}
		inc := in.IncumbentMargins
		if inc == nil {
			inc = map[string]float64{}
		}
		return events.EvaluatorCandidateTrained, events.EvaluatorCandidateTrainedV1{CandidateID: cmd.ID, WorkerID: cmd.WorkerID,
			ArtifactKey: cand.ArtifactKey, Metrics: in.Metrics, ActionRewardStats: in.ActionRewardStats,
			CandidateMargins: in.CandidateMargins, IncumbentMargins: inc}, nil
	})
}

// FailCandidate is a worker's failure report; msg is the end of its log.
type FailCandidate struct {
	WorkerID string
	ID       string
	Message  string
}

// FailCandidateHandler runs FailCandidate.
type FailCandidateHandler struct{ *Streams }

func (c FailCandidateHandler) Handle(ctx context.Context, cmd FailCandidate) (Result, error) {
	cmd.Message = failureLog(cmd.Message)
	return c.onEvaluator(ctx, WorkerActor(cmd.WorkerID), func(s evaluator.State) (string, any, error) {
		_, err := s.DecideReport(cmd.ID, cmd.WorkerID)
		return events.EvaluatorCandidateFailed, events.EvaluatorCandidateFailedV1{CandidateID: cmd.ID, WorkerID: cmd.WorkerID, Error: cmd.Message}, err
	})
}

// CandidateHeartbeat renews the holder's lease on a running candidate; a
// worker that no longer holds it (its lease expired, it was cancelled) is
// refused with a ConflictError and stops.
type CandidateHeartbeat struct {
	WorkerID string
	ID       string
}

// CandidateHeartbeatHandler runs CandidateHeartbeat.
type CandidateHeartbeatHandler struct{ *Streams }

func (c CandidateHeartbeatHandler) Handle(ctx context.Context, cmd CandidateHeartbeat) (Result, error) {
	return c.onEvaluator(ctx, WorkerActor(cmd.WorkerID), func(s evaluator.State) (string, any, error) {
		_, err := s.DecideReport(cmd.ID, cmd.WorkerID)
		return events.EvaluatorCandidateHeartbeat, events.EvaluatorCandidateHeartbeatV1{CandidateID: cmd.ID, WorkerID: cmd.WorkerID}, err
	})
}

// ExpireCandidateLease handles a running candidate whose worker stopped
// heartbeating (the stream decides): it goes back to the queue for the
// next free worker (evaluator.candidate_requeued, reason lease_expired),
// or fails once lease.MaxLostRuns runs were lost. fallback is the
// lease of a claim recorded before candidates had one. Nothing is appended
// while the lease runs.
type ExpireCandidateLease struct {
	ID       string
	Now      time.Time
	Fallback time.Duration
}

// ExpireCandidateLeaseHandler runs ExpireCandidateLease.
type ExpireCandidateLeaseHandler struct{ *Streams }

func (c ExpireCandidateLeaseHandler) Handle(ctx context.Context, cmd ExpireCandidateLease) (Result, error) {
	return c.onEvaluator(ctx, Actor{}, func(s evaluator.State) (string, any, error) {
		out, _ := s.DecideLeaseExpiry(cmd.ID, cmd.Now, cmd.Fallback)
		return expiry(events.EvaluatorCandidateRequeued, out.Requeue, events.EvaluatorCandidateFailed, out.Fail)
	})
}

// handBackCandidate returns the holder's running candidate to the queue
// (the worker is stopping); the dispatch projection publishes its job
// again and the next free worker trains it from the start.
func (c *Streams) handBackCandidate(ctx context.Context, workerID, id, reason string) (Result, error) {
	reason = truncateRunes(cmp.Or(reason, "worker "+workerID+" stopped"), 500)
	return c.onEvaluator(ctx, WorkerActor(workerID), func(s evaluator.State) (string, any, error) {
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
