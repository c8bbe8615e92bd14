package commands

import (
	"context"
	"math"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/jobs/lease"
	"github.com/criticml/critic/domain/traces"
	"github.com/google/uuid"
)

// ClaimEvaluatorScoring hands a worker the live release's checkpoint and
// the trace's actions as the evaluator reads them (system instructions,
// metadata.evaluation_context, prior context). Nothing is appended: the
// report decides, and a second report of the same revision and release is
// refused.
type ClaimEvaluatorScoring struct {
	TraceID string
}

// ClaimEvaluatorScoringHandler runs ClaimEvaluatorScoring.
type ClaimEvaluatorScoringHandler struct{ *Streams }

func (c ClaimEvaluatorScoringHandler) Handle(ctx context.Context, cmd ClaimEvaluatorScoring) (jobs.EvaluatorScoringClaim, error) {
	t, live, err := c.scoringTarget(ctx, cmd.TraceID)
	if err != nil {
		return jobs.EvaluatorScoringClaim{}, err
	}
	out := jobs.EvaluatorScoringClaim{TraceID: cmd.TraceID, TraceRevision: t.Revision, Release: live.Release, ArtifactKey: live.ArtifactKey,
		Inputs: []jobs.EvaluatorActionInput{}}
	for _, in := range evaluator.ActionInputs(t.State) {
		out.Inputs = append(out.Inputs, jobs.EvaluatorActionInput{StepID: in.StepID, Text: in.Text})
	}
	return out, nil
}

// RecordEvaluatorScores is a worker's scoring report: one finite score
// per scorable action of the revision, each credit within [−1, 1].
type RecordEvaluatorScores struct {
	TraceID string
	Scores  jobs.EvaluatorScored
}

// RecordEvaluatorScoresHandler runs RecordEvaluatorScores.
type RecordEvaluatorScoresHandler struct{ *Streams }

func (c RecordEvaluatorScoresHandler) Handle(ctx context.Context, cmd RecordEvaluatorScores) (Result, error) {
	in := cmd.Scores
	return retryOnConflict(func() (Result, error) {
		t, live, err := c.scoringTarget(ctx, cmd.TraceID)
		if err != nil {
			return Result{}, err
		}
		if err := checkReport(t, live, in.EvaluatorScoringRequest); err != nil {
			return Result{}, err
		}
		want := evaluator.ActionInputs(t.State)
		if len(in.Scores) != len(want) {
			return Result{}, domain.Invalid("%d scores for %d actions", len(in.Scores), len(want))
		}
		scores := make([]events.EvaluatorActionScore, len(want))
		for i, a := range want {
			sc := in.Scores[i]
			switch {
			case sc.StepID != a.StepID:
				return Result{}, domain.Invalid("score %d is for step %q; the action there is step %s", i, sc.StepID, a.StepID)
			case math.IsNaN(sc.Score) || math.IsInf(sc.Score, 0):
				return Result{}, domain.Invalid("step %s: the score is not a finite number", sc.StepID)
			case !(sc.Credit >= -1 && sc.Credit <= 1):
				return Result{}, domain.Invalid("step %s: credit %v is outside [-1, 1]", sc.StepID, sc.Credit)
			}
			scores[i] = events.EvaluatorActionScore{StepID: sc.StepID, Score: sc.Score, Credit: sc.Credit}
		}
		return c.appendToTrace(ctx, WorkerActor(in.WorkerID), t.State, events.EvaluatorTraceScored,
			events.EvaluatorTraceScoredV1{TraceID: cmd.TraceID, TraceRevision: t.Revision, Release: live.Release, WorkerID: in.WorkerID, Scores: scores})
	})
}

// FailEvaluatorScoring records a failed scoring job with the end of the
// worker's log; the trace then says so until a later revision or release
// scores it.
type FailEvaluatorScoring struct {
	TraceID string
	Failure jobs.EvaluatorScoringFailed
}

// FailEvaluatorScoringHandler runs FailEvaluatorScoring.
type FailEvaluatorScoringHandler struct{ *Streams }

func (c FailEvaluatorScoringHandler) Handle(ctx context.Context, cmd FailEvaluatorScoring) (Result, error) {
	in := cmd.Failure
	msg := failureLog(strings.TrimSpace(in.Error))
	return retryOnConflict(func() (Result, error) {
		t, live, err := c.scoringTarget(ctx, cmd.TraceID)
		if err != nil {
			return Result{}, err
		}
		if err := checkReport(t, live, in.EvaluatorScoringRequest); err != nil {
			return Result{}, err
		}
		return c.appendToTrace(ctx, WorkerActor(in.WorkerID), t.State, events.EvaluatorTraceScoringFailed,
			events.EvaluatorTraceScoringFailedV1{TraceID: cmd.TraceID, TraceRevision: t.Revision, Release: live.Release, WorkerID: in.WorkerID, Error: msg})
	})
}

// evaluatorTrace is a trace with what the shared evaluator recorded on it:
// the (revision, release) pairs already scored.
type evaluatorTrace struct {
	traces.State
	scored map[[2]int]bool
}

func (c *Streams) loadEvaluatorTrace(ctx context.Context, traceID string) (evaluatorTrace, error) {
	evs, err := c.loadStream(ctx, events.TraceStream(traceID))
	if err != nil {
		return evaluatorTrace{}, err
	}
	t := evaluatorTrace{scored: map[[2]int]bool{}}
	for _, e := range evs {
		if err := t.Apply(e); err != nil {
			return evaluatorTrace{}, err
		}
		if e.Type == events.EvaluatorTraceScored {
			var p events.EvaluatorTraceScoredV1
			if e.Decode(&p) == nil {
				t.scored[[2]int{p.TraceRevision, p.Release}] = true
			}
		}
		if e.Type == events.EvaluatorTraceRescoreRequested { // "Score again": one more scoring may be claimed
			var p events.EvaluatorTraceRescoreRequestedV1
			if e.Decode(&p) == nil {
				delete(t.scored, [2]int{p.TraceRevision, p.Release})
			}
		}
	}
	return t, nil
}

// scoringTarget checks a trace can be scored by the live release now: a
// release is live, the trace exists, and this revision is not yet scored
// by it (a duplicate delivery, or a job published twice, is refused).
func (c *Streams) scoringTarget(ctx context.Context, traceID string) (evaluatorTrace, *evaluator.Release, error) {
	if _, err := uuid.Parse(traceID); err != nil {
		return evaluatorTrace{}, nil, domain.NotFound("trace", traceID)
	}
	live, err := c.liveRelease(ctx)
	if err != nil {
		return evaluatorTrace{}, nil, err
	}
	if live == nil {
		return evaluatorTrace{}, nil, lease.NotClaimable("no shared evaluator release is live: traces wait for the first release")
	}
	t, err := c.loadEvaluatorTrace(ctx, traceID)
	if err != nil {
		return evaluatorTrace{}, nil, err
	}
	if !t.Exists {
		return evaluatorTrace{}, nil, lease.NotClaimable("trace %s does not exist (any more)", traceID)
	}
	if t.scored[[2]int{t.Revision, live.Release}] {
		return evaluatorTrace{}, nil, lease.NotClaimable("revision %d of trace %s is already scored by release %d", t.Revision, traceID, live.Release)
	}
	return t, live, nil
}

// checkReport refuses a report about anything but the live release and the
// trace's current revision: a stale report (the trace changed, or another
// release shipped) is answered 409 and its job is superseded by the one the
// change published.
func checkReport(t evaluatorTrace, live *evaluator.Release, req jobs.EvaluatorScoringRequest) error {
	if req.WorkerID == "" {
		return domain.Invalid("worker_id is required")
	}
	if req.TraceRevision != t.Revision || req.Release != live.Release {
		return lease.NotClaimable("the report is about revision %d and release %d; trace %s is at revision %d and release %d is live",
			req.TraceRevision, req.Release, t.ID, t.Revision, live.Release)
	}
	return nil
}

// liveRelease folds only the evaluator stream's releases and rollbacks:
// which release is live (nil: none), read for every scoring job and every
// dispatched import without loading benchmarks and margins.
func (c *Streams) liveRelease(ctx context.Context) (*evaluator.Release, error) {
	evs, err := c.store.LoadStreamTypes(ctx, events.EvaluatorStream, []string{events.EvaluatorReleased, events.EvaluatorRolledBack})
	if err != nil {
		return nil, err
	}
	var s evaluator.State
	for _, e := range evs {
		s.Apply(e)
	}
	return s.LiveRelease(), nil
}

// EvaluatorScoringTargets is every trace the live release should score
// (nil when none is live): what a new release rescores, in the
// background, one job per trace.
// It reads the log, not the read model, because dispatch calls it when it
// meets the release event, which the read model may not have applied yet.
func (c *Streams) EvaluatorScoringTargets(ctx context.Context) ([]string, error) {
	live, err := c.liveRelease(ctx)
	if err != nil || live == nil {
		return nil, err
	}
	head, err := c.store.Head(ctx)
	if err != nil {
		return nil, err
	}
	streams, err := c.store.StreamsWithType(ctx, events.TraceImported, head)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(streams))
	for _, st := range streams {
		if id, ok := strings.CutPrefix(st, "trace/"); ok {
			out = append(out, id)
		}
	}
	return out, nil
}

// EvaluatorLive reports whether a shared evaluator release is live.
// From the log for the same reason as EvaluatorScoringTargets.
func (c *Streams) EvaluatorLive(ctx context.Context) (bool, error) {
	live, err := c.liveRelease(ctx)
	return live != nil, err
}

var _ = onKind(jobs.KindEvaluatorScore, (*Streams).evaluatorScoringJob)

// evaluatorScoringJob is KindEvaluatorScore: score a trace's actions with the
// live release; the result (and a failure) names the revision and release
// the claim answered, which must still be current.
func (c *Streams) evaluatorScoringJob() jobActions {
	type call[B any] = jobCall[jobs.EvaluatorScoreJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return ClaimEvaluatorScoringHandler{c}.Handle(ctx, ClaimEvaluatorScoring{TraceID: r.ID})
		}),
		jobs.Finish: onJob(func(ctx context.Context, r call[jobs.EvaluatorScored]) (any, error) {
			r.Body.WorkerID = r.Worker
			return jobAck(RecordEvaluatorScoresHandler{c}.Handle(ctx, RecordEvaluatorScores{TraceID: r.ID, Scores: r.Body}))
		}),
		jobs.Fail: onJob(func(ctx context.Context, r call[jobs.EvaluatorScoringRequest]) (any, error) {
			r.Body.WorkerID = r.Worker
			return jobAck(FailEvaluatorScoringHandler{c}.Handle(ctx, FailEvaluatorScoring{TraceID: r.ID, Failure: jobs.EvaluatorScoringFailed{EvaluatorScoringRequest: r.Body, Error: r.Error}}))
		}),
	}
}
