package evaluator

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs/lease"
)

// Candidate statuses.
const (
	CandidateQueued    = lease.Queued
	CandidateRunning   = lease.Running
	CandidateSucceeded = lease.Succeeded
	CandidateFailed    = lease.Failed
)

// Candidate is one requested candidate as the evaluator stream tells it.
type Candidate struct {
	events.EvaluatorCandidateRequestedV1
	// Job is the candidate's claim (a lease of 0: recorded before
	// candidates had leases).
	lease.Job
	Trained *events.EvaluatorCandidateTrainedV1
	Error   string
	// Released is the release version it became (0: never released).
	Released int
}

// Release is one release and whether it was rolled back.
type Release struct {
	events.EvaluatorReleasedV1
	RolledBack bool
}

// State is the shared evaluator stream folded: benchmark versions,
// candidates in request order, releases, and which release is live. It is
// the one place the release process's rules read from, so a replay of the
// stream reaches the same releases.
type State struct {
	Version    int64
	Benchmarks []events.EvaluatorBenchmarkFrozenV1
	Candidates []*Candidate
	Releases   []Release
	// Live is the live release (0: none); Previous[n] is the release that
	// was live when release n shipped, where a rollback of n returns.
	Live     int
	Previous map[int]int
}

// Apply folds one event of the evaluator stream; unknown types are kept
// out (appliers never fail).
func (s *State) Apply(e events.Envelope) {
	s.Version = e.Version
	if s.Previous == nil {
		s.Previous = map[int]int{}
	}
	switch e.Type {
	case events.EvaluatorBenchmarkFrozen:
		var p events.EvaluatorBenchmarkFrozenV1
		if e.Decode(&p) == nil {
			s.Benchmarks = append(s.Benchmarks, p)
		}
	case events.EvaluatorCandidateRequested:
		var p events.EvaluatorCandidateRequestedV1
		if e.Decode(&p) == nil {
			c := &Candidate{EvaluatorCandidateRequestedV1: p}
			c.Queue()
			s.Candidates = append(s.Candidates, c)
		}
	case events.EvaluatorCandidateStarted:
		var p events.EvaluatorCandidateStartedV1
		if e.Decode(&p) == nil {
			if c := s.Candidate(p.CandidateID); c != nil {
				c.Claimed(p.WorkerID, p.LeaseSeconds, e.RecordedAt)
			}
		}
	case events.EvaluatorCandidateHeartbeat:
		var p events.EvaluatorCandidateHeartbeatV1
		if e.Decode(&p) == nil {
			if c := s.Candidate(p.CandidateID); c != nil && c.HeldBy(p.WorkerID) {
				c.Beat(e.RecordedAt)
			}
		}
	case events.EvaluatorCandidateRequeued:
		var p events.EvaluatorCandidateRequeuedV1
		if e.Decode(&p) == nil {
			if c := s.Candidate(p.CandidateID); c != nil {
				c.Requeued(p.Reason, p.Detail)
			}
		}
	case events.EvaluatorCandidateTrained:
		var p events.EvaluatorCandidateTrainedV1
		if e.Decode(&p) == nil {
			if c := s.Candidate(p.CandidateID); c != nil {
				c.Status, c.Trained = CandidateSucceeded, &p
			}
		}
	case events.EvaluatorCandidateFailed:
		var p events.EvaluatorCandidateFailedV1
		if e.Decode(&p) == nil {
			if c := s.Candidate(p.CandidateID); c != nil {
				c.Status, c.Error = CandidateFailed, p.Error
			}
		}
	case events.EvaluatorReleased:
		var p events.EvaluatorReleasedV1
		if e.Decode(&p) == nil {
			s.Releases = append(s.Releases, Release{EvaluatorReleasedV1: p})
			s.Previous[p.Release] = s.Live
			s.Live = p.Release
			if c := s.Candidate(p.CandidateID); c != nil {
				c.Released = p.Release
			}
		}
	case events.EvaluatorRolledBack:
		var p events.EvaluatorRolledBackV1
		if e.Decode(&p) == nil {
			if r := s.release(p.From); r != nil {
				r.RolledBack = true
			}
			s.Live = p.To
		}
	}
}

// Candidate returns a candidate by id (nil when none).
func (s *State) Candidate(id string) *Candidate {
	if i := slices.IndexFunc(s.Candidates, func(c *Candidate) bool { return c.CandidateID == id }); i >= 0 {
		return s.Candidates[i]
	}
	return nil
}

func (s *State) release(n int) *Release {
	if i := slices.IndexFunc(s.Releases, func(r Release) bool { return r.Release == n }); i >= 0 {
		return &s.Releases[i]
	}
	return nil
}

// LiveRelease is the live release (nil before the first, or after the
// only one was rolled back).
func (s *State) LiveRelease() *Release {
	if s.Live == 0 {
		return nil
	}
	return s.release(s.Live)
}

// Benchmark returns a frozen version (nil when none).
func (s *State) Benchmark(version int) *events.EvaluatorBenchmarkFrozenV1 {
	if i := slices.IndexFunc(s.Benchmarks, func(b events.EvaluatorBenchmarkFrozenV1) bool { return b.Version == version }); i >= 0 {
		return &s.Benchmarks[i]
	}
	return nil
}

// LatestTrained is the last candidate that trained (nil when none).
func (s *State) LatestTrained() *Candidate {
	for _, v := range slices.Backward(s.Candidates) {
		if v.Status == CandidateSucceeded {
			return v
		}
	}
	return nil
}

// DecideRequest checks a candidate can be requested now: a benchmark must
// exist (the gates need one), and the dataset must have pairs to train on.
func (s *State) DecideRequest(numPairs int) error {
	if len(s.Benchmarks) == 0 {
		return &domain.ConflictError{Code: "no_benchmark",
			Message: "no benchmark is frozen yet: a candidate is tested on one, so run `critic evaluator benchmark freeze` first"}
	}
	if numPairs < 2 {
		return &domain.ConflictError{Code: "too_few_pairs",
			Message: fmt.Sprintf("the contributed training data has %d usable pair(s) outside the benchmark groups; a candidate needs at least 2: "+
				"opt more traces in (PUT /traces/{id}/contribution) and review comparisons (POST /comparisons)", numPairs)}
	}
	return nil
}

// DecideClaim checks a worker may claim a candidate: only a queued one can
// be, so a duplicate delivery never starts it twice.
func (s *State) DecideClaim(id string) (*Candidate, error) {
	c := s.Candidate(id)
	if c == nil {
		return nil, &domain.NotFoundError{What: "evaluator candidate", ID: id}
	}
	if c.Status != CandidateQueued {
		return nil, lease.NotClaimable("candidate %s is %s, not queued", id, c.Status)
	}
	return c, nil
}

// DecideReport checks the worker reporting on a candidate is the one
// running it.
func (s *State) DecideReport(id, workerID string) (*Candidate, error) {
	c := s.Candidate(id)
	if c == nil {
		return nil, &domain.NotFoundError{What: "evaluator candidate", ID: id}
	}
	if c.Status != CandidateRunning || c.WorkerID != workerID {
		return nil, lease.NotClaimable("candidate %s is %s and not held by worker %s", id, c.Status, workerID)
	}
	return c, nil
}

// CheckMargins refuses a trained report whose margins do not cover the
// candidate's benchmark exactly (and the incumbent's too when there is
// one) or hold a non-finite number: the gates must read every item.
func CheckMargins(b *events.EvaluatorBenchmarkFrozenV1, c *Candidate, cand, inc map[string]float64) error {
	items := c.BenchmarkItems(b)
	check := func(who string, m map[string]float64) error {
		if len(m) != len(items) {
			return domain.Invalid("%s margins cover %d items; benchmark version %d has %d", who, len(m), b.Version, len(items))
		}
		for _, it := range items {
			v, ok := m[it.ID]
			if !ok {
				return domain.Invalid("%s margins miss benchmark item %s", who, it.ID)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return domain.Invalid("%s margin of item %s is not a finite number", who, it.ID)
			}
		}
		return nil
	}
	if err := check("candidate", cand); err != nil {
		return err
	}
	if c.IncumbentRelease == 0 {
		if len(inc) != 0 {
			return domain.Invalid("the candidate has no incumbent, yet incumbent margins were sent")
		}
		return nil
	}
	return check("incumbent", inc)
}

// Report is the gate report of a trained candidate against the incumbent
// it was scored with.
func (s *State) Report(c *Candidate, p Policy) (Report, error) {
	if c.Status != CandidateSucceeded || c.Trained == nil {
		return Report{}, &domain.ConflictError{Code: "candidate_not_trained",
			Message: fmt.Sprintf("candidate %s is %s: only a trained candidate has benchmark figures", c.CandidateID, c.Status)}
	}
	b := s.Benchmark(c.BenchmarkVersion)
	if b == nil {
		return Report{}, fmt.Errorf("candidate %s names benchmark version %d, which the stream does not hold", c.CandidateID, c.BenchmarkVersion)
	}
	var inc Margins
	if c.IncumbentRelease != 0 {
		inc = c.Trained.IncumbentMargins
	}
	return Evaluate(Benchmark{Version: b.Version, AsOfSeq: b.AsOfSeq, Items: c.BenchmarkItems(b)}, inc, c.Trained.CandidateMargins, p), nil
}

// BenchmarkItems are the items of b the candidate is judged on: all but
// those whose trace was erased before it was requested (its dataset does
// not hold them, issue 37). A version with erased items is judged on the
// rest, under the same gates; the slices count what is left.
func (c *Candidate) BenchmarkItems(b *events.EvaluatorBenchmarkFrozenV1) []events.EvaluatorItem {
	if len(c.ErasedItems) == 0 {
		return b.Items
	}
	out := make([]events.EvaluatorItem, 0, len(b.Items))
	for _, it := range b.Items {
		if !slices.Contains(c.ErasedItems, it.ID) {
			out = append(out, it)
		}
	}
	return out
}

// GateError is a release refused by the gates: every failed gate, one line
// each.
type GateError struct {
	CandidateID string
	Reasons     []string
}

func (e *GateError) Error() string {
	var msg strings.Builder
	msg.WriteString("candidate " + e.CandidateID + " is not released: it fails the release gates:")
	for _, r := range e.Reasons {
		msg.WriteString("\n  - " + r)
	}
	return msg.String()
}

// Conflict makes it a domain conflict (409 at the edge).
func (e *GateError) Conflict() *domain.ConflictError {
	return &domain.ConflictError{Code: "release_gates_failed", Message: e.Error()}
}

// DecideRelease returns the release event of a candidate that passes the
// gates against the live release, or why not.
func (s *State) DecideRelease(c *Candidate, p Policy, by string) (events.EvaluatorReleasedV1, Report, error) {
	if c.Released != 0 {
		return events.EvaluatorReleasedV1{}, Report{}, &domain.ConflictError{Code: "already_released",
			Message: fmt.Sprintf("candidate %s is already release %d", c.CandidateID, c.Released)}
	}
	r, err := s.Report(c, p)
	if err != nil {
		return events.EvaluatorReleasedV1{}, Report{}, err
	}
	if c.IncumbentRelease != s.Live {
		return events.EvaluatorReleasedV1{}, r, &domain.ConflictError{Code: "incumbent_changed",
			Message: fmt.Sprintf("candidate %s was scored against release %d, but release %d is live now: train a new candidate (critic evaluator train) so the gates compare it with the live release",
				c.CandidateID, c.IncumbentRelease, s.Live)}
	}
	if !r.Pass {
		return events.EvaluatorReleasedV1{}, r, (&GateError{CandidateID: c.CandidateID, Reasons: r.Reasons}).Conflict()
	}
	ev := events.EvaluatorReleasedV1{Release: len(s.Releases) + 1, CandidateID: c.CandidateID, BenchmarkVersion: c.BenchmarkVersion,
		ArtifactKey: c.ArtifactKey, Replaces: s.Live, Policy: events.EvaluatorPolicyV1{MinSlice: p.MinSlice, Tolerance: p.Tolerance, Rounds: p.Rounds, Seed: p.Seed},
		Overall: figures(r.Overall), Slices: make([]events.EvaluatorSliceFigures, len(r.Slices)), ReleasedBy: by}
	for i, sl := range r.Slices {
		ev.Slices[i] = figures(sl)
	}
	return ev, r, nil
}

// DecideRollback withdraws the live release; the one live before it
// serves again.
func (s *State) DecideRollback(by string) (events.EvaluatorRolledBackV1, error) {
	if s.Live == 0 {
		return events.EvaluatorRolledBackV1{}, &domain.ConflictError{Code: "no_release", Message: "no shared evaluator release is live: there is nothing to roll back"}
	}
	return events.EvaluatorRolledBackV1{From: s.Live, To: s.Previous[s.Live], RolledBackBy: by}, nil
}

func figures(c Comparison) events.EvaluatorSliceFigures {
	return events.EvaluatorSliceFigures{Name: c.Name, Items: c.Items, Incumbent: c.Incumbent, Candidate: c.Candidate, Diff: c.Diff,
		Low: c.Low, High: c.High, Populated: c.Populated, Regressed: c.Regressed}
}

// PolicyFromEvent is the policy a release recorded.
func PolicyFromEvent(p events.EvaluatorPolicyV1) Policy {
	return Policy{MinSlice: p.MinSlice, Tolerance: p.Tolerance, Rounds: p.Rounds, Seed: p.Seed}
}

// LeaseExpiry is what an expired candidate lease leads to: exactly one of
// Requeue (tries left) and Fail (the lease.MaxLostRuns-th lost run).
type LeaseExpiry struct {
	Requeue *events.EvaluatorCandidateRequeuedV1
	Fail    *events.EvaluatorCandidateFailedV1
}

var candidateLapse = lease.Rules{Silence: "stopped reporting (no heartbeat for %s, the lease; last at %s)",
	Job: "Evaluator candidate failed", Lapse: "lease expired",
	Remedy: "request a new candidate (critic evaluator train) once the workers are healthy"}

// DecideLeaseExpiry handles a running candidate whose worker stopped
// renewing its lease before now: the lease sweep rule (lease.Rules.Expire).
// fallback is the lease of a claim that recorded none; without either,
// the candidate never expires.
func (s *State) DecideLeaseExpiry(id string, now time.Time, fallback time.Duration) (out LeaseExpiry, expired bool) {
	c := s.Candidate(id)
	if c == nil {
		return out, false
	}
	held := c.Job
	if held.Lease <= 0 {
		held.Lease = fallback
	}
	if held.Lease <= 0 {
		return out, false
	}
	x, ok := candidateLapse.Expire(held, now)
	switch {
	case !ok:
		return out, false
	case x.Fail != "":
		return LeaseExpiry{Fail: &events.EvaluatorCandidateFailedV1{CandidateID: id, WorkerID: c.WorkerID, Error: x.Fail}}, true
	}
	return LeaseExpiry{Requeue: &events.EvaluatorCandidateRequeuedV1{CandidateID: id, WorkerID: c.WorkerID,
		Reason: events.RequeueLeaseExpired, Detail: x.Detail, LostRuns: x.LostRuns}}, true
}

// Running is the ids of the candidates a worker holds now, in request
// order: the ones whose lease the sweep checks.
func (s *State) Running() []string {
	var ids []string
	for _, c := range s.Candidates {
		if c.Status == CandidateRunning {
			ids = append(ids, c.CandidateID)
		}
	}
	return ids
}
