package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// EvaluatorState folds the shared evaluator's stream: benchmarks,
// candidates, releases and the live release.
// Every evaluator command decides on it; the read model keeps only the
// releases and benchmarks, not candidates' leases and margins.
func (c *Commands) EvaluatorState(ctx context.Context) (evaluator.State, error) {
	loaded, err := c.store.LoadStreams(ctx, []string{events.EvaluatorStream})
	if err != nil {
		return evaluator.State{}, err
	}
	var s evaluator.State
	for _, e := range loaded[events.EvaluatorStream] {
		s.Apply(e)
	}
	return s, nil
}

func (c *Commands) appendEvaluator(ctx context.Context, actor Actor, s evaluator.State, typ string, payload any) (Result, error) {
	return c.append(ctx, actor, map[string]int64{events.EvaluatorStream: s.Version}, []events.New{{ID: newID(), Stream: events.EvaluatorStream,
		OwnerID: events.SystemOwnerID, Type: typ, Payload: payload}})
}

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

// CandidateJobDataset is the blob a candidate job reads: its training
// pairs as step-level action comparisons, each with the trace it came
// from (the trainer's held-out split is by trace), and the benchmark's
// items (b with its text: benchmarkText). Deterministic, so a rebuild from
// the log has the same digest.
func CandidateJobDataset(id string, b events.EvaluatorBenchmarkFrozenV1, pairs []evaluator.TrainingPair) jobs.EvaluatorDataset {
	ds := jobs.EvaluatorDataset{CandidateID: id, BenchmarkVersion: b.Version, Pairs: make([]rewardmodels.DatasetPair, len(pairs)),
		Benchmark: make([]jobs.EvaluatorBenchmarkItem, len(b.Items))}
	for i, p := range pairs {
		at := domain.ActionResponse
		dp := rewardmodels.DatasetPair{Chosen: p.Chosen, Rejected: p.Rejected, TraceIDs: []string{p.TraceID}, Granularity: "step",
			ActionType: &at, AnnotationIDs: p.AnnotationIDs, TraceRevisions: map[string]int{p.TraceID: p.Revision}, Source: p.Source}
		if p.ComparisonID != "" {
			dp.ComparisonIDs = []string{p.ComparisonID}
		}
		if p.FindingID != "" {
			dp.FindingIDs = []string{p.FindingID}
		}
		ds.Pairs[i] = dp
	}
	for i, it := range b.Items {
		ds.Benchmark[i] = jobs.EvaluatorBenchmarkItem{ID: it.ID, Chosen: it.Chosen, Rejected: it.Rejected}
	}
	return ds
}

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

// HandBackCandidate returns the holder's running candidate to the queue
// (the worker is stopping); the dispatch projection publishes its job
// again and the next free worker trains it from the start.
func (c *Commands) HandBackCandidate(ctx context.Context, workerID, id, reason string) (Result, error) {
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
func (c *Commands) CandidateReport(ctx context.Context, id string, p evaluator.Policy) (*evaluator.Candidate, evaluator.Report, error) {
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

// RollbackResult is a rollback.
type RollbackResult struct {
	Result
	Rollback events.EvaluatorRolledBackV1
}

// RollbackEvaluator is `critic evaluator rollback`: the live release is
// withdrawn and the one live before it serves again (none: traces wait for
// a release again).
func (c *Commands) RollbackEvaluator(ctx context.Context, by string) (RollbackResult, error) {
	var out RollbackResult
	r, err := retryOnConflict(func() (Result, error) {
		s, err := c.EvaluatorState(ctx)
		if err != nil {
			return Result{}, err
		}
		ev, err := s.DecideRollback(by)
		if err != nil {
			return Result{}, err
		}
		out.Rollback = ev
		return c.appendEvaluator(ctx, Actor{}, s, events.EvaluatorRolledBack, ev)
	})
	out.Result = r
	return out, err
}

// VerifyCandidateDatasets rebuilds every candidate's dataset from the log
// as of its cut and compares its digest with the one recorded: every
// candidate, and so every release, is reproducible from the log.
// A check of the log against itself, so it reads the log, not the read model.
func (c *Commands) VerifyCandidateDatasets(ctx context.Context) (int, error) {
	s, err := c.EvaluatorState(ctx)
	if err != nil {
		return 0, err
	}
	for _, cand := range s.Candidates {
		pairs, err := c.CandidateDatasetAsOf(ctx, cand.AsOfSeq)
		if err != nil {
			return 0, err
		}
		b := s.Benchmark(cand.BenchmarkVersion)
		if b == nil {
			return 0, fmt.Errorf("candidate %s names benchmark version %d, which the stream does not hold", cand.CandidateID, cand.BenchmarkVersion)
		}
		withText, _, err := c.benchmarkText(ctx, *b)
		if err != nil {
			return 0, err
		}
		raw, err := json.Marshal(CandidateJobDataset(cand.CandidateID, withText, pairs))
		if err != nil {
			return 0, err
		}
		sum := sha256.Sum256(raw)
		if hex.EncodeToString(sum[:]) != cand.DatasetSHA256 {
			return 0, fmt.Errorf("candidate %s: its dataset does not match a rebuild from the log as of seq %d", cand.CandidateID, cand.AsOfSeq)
		}
	}
	return len(s.Candidates), nil
}

// VerifyReleases replays the evaluator stream and, at every release,
// decides it again from what the stream held just before it (the
// candidate's recorded margins, its benchmark, the live release) under the
// policy it recorded: every release must come out the same, with the same
// figures. It returns how many releases it checked.
func (c *Commands) VerifyReleases(ctx context.Context) (int, error) {
	loaded, err := c.store.LoadStreams(ctx, []string{events.EvaluatorStream})
	if err != nil {
		return 0, err
	}
	var s evaluator.State
	n := 0
	for _, e := range loaded[events.EvaluatorStream] {
		if e.Type == events.EvaluatorReleased {
			var p events.EvaluatorReleasedV1
			if err := e.Decode(&p); err != nil {
				return n, err
			}
			cand := s.Candidate(p.CandidateID)
			if cand == nil {
				return n, fmt.Errorf("release %d names candidate %s, which the stream did not hold before it", p.Release, p.CandidateID)
			}
			again, _, err := s.DecideRelease(cand, evaluator.PolicyFromEvent(p.Policy), p.ReleasedBy)
			if err != nil {
				return n, fmt.Errorf("release %d does not replay: %w", p.Release, err)
			}
			if !reflect.DeepEqual(again, p) {
				return n, fmt.Errorf("release %d does not replay to the same release and figures", p.Release)
			}
			n++
		}
		s.Apply(e)
	}
	return n, nil
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

// CancelCandidate is `critic evaluator cancel ID`: an operator fails a
// queued or running candidate (one not worth finishing; a dead worker's
// candidate is requeued on lease expiry without it), so the schedule and
// reports move on. A worker still
// running it is refused when it reports.
func (c *Commands) CancelCandidate(ctx context.Context, id, by string) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		s, err := c.EvaluatorState(ctx)
		if err != nil {
			return Result{}, err
		}
		cand := s.Candidate(id)
		if cand == nil {
			return Result{}, &domain.NotFoundError{What: "evaluator candidate", ID: id}
		}
		if cand.Status != evaluator.CandidateQueued && cand.Status != evaluator.CandidateRunning {
			return Result{}, &domain.ConflictError{Code: "candidate_finished", Message: fmt.Sprintf("candidate %s is %s: only a queued or running candidate can be cancelled", id, cand.Status)}
		}
		return c.appendEvaluator(ctx, Actor{}, s, events.EvaluatorCandidateFailed,
			events.EvaluatorCandidateFailedV1{CandidateID: id, Error: "cancelled by " + by})
	})
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
			return jobAck(c.HandBackCandidate(ctx, r.Worker, r.ID, r.Reason))
		}),
	}
}
