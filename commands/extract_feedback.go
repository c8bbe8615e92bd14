package commands

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// The commands in this file are what the worker service runs for an
// extraction worker (spec 001 "Personal reward model training"): the worker
// claims an attempt's extraction, reads its inputs from the blob store,
// calls the feedback model and reports each trace's findings, which are
// appended here — before the dataset and its minimum-pair check, so a model
// that fails keeps its learning report.

// ClaimExtraction gives one worker an attempt's extraction. Findings already
// recorded for the same trace revision, classifier model, prompt version
// and criteria (an earlier attempt, or this one before its worker died) are
// reused — copied into this attempt without a model call — and their traces
// left out of the inputs.
type ClaimExtraction struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Lease    time.Duration
}

// ClaimExtractionHandler runs ClaimExtraction.
type ClaimExtractionHandler struct{ *Streams }

func (c ClaimExtractionHandler) Handle(ctx context.Context, cmd ClaimExtraction) (ExtractionClaim, error) {
	st, err := c.loadModel(ctx, "", cmd.ModelID)
	if err != nil {
		return ExtractionClaim{}, err
	}
	if err := rewardmodels.DecideClaimExtraction(st, cmd.Attempt, cmd.WorkerID, cmd.Lease, time.Now()); err != nil {
		return ExtractionClaim{}, err
	}
	asOf, err := c.QueuedAt(ctx, st)
	if err != nil {
		return ExtractionClaim{}, err
	}
	selected, _, err := c.selection(ctx, st, asOf)
	if err != nil {
		return ExtractionClaim{}, err
	}
	criteria := st.Config.Criteria
	if len(criteria) == 0 {
		criteria = feedback.DefaultCriteria
	}
	hash := feedback.ConfigHash(criteria)
	in := jobs.ExtractionInputs{ModelID: st.ID, Attempt: cmd.Attempt, ClassifierModel: st.Plan.Model, PromptVersion: feedback.PromptVersion,
		Criteria: criteria, ConfigHash: hash, RubricDropout: true, Traces: []feedback.Trace{}}

	var pts []domain.PairTrace
	var ratings []domain.Rating
	for _, s := range selected {
		pts = append(pts, rewardmodels.PairTraceFor(s, st.Config))
		ratings = append(ratings, rewardmodels.Ratings(s)...)
	}
	have := len(domain.BuildPairsRendered(pts, ratings, st.Requested.MaxPairs, st.Config.InputVersion))
	stream := events.RewardModelStream(st.ID)
	var reused []events.New
	total, done := 0, 0
	recorded := map[string]bool{}
	for _, r := range st.Extracted {
		recorded[r.TraceID] = true
		have += rewardmodels.PairFindings(r)
	}
	for _, s := range selected {
		ft := rewardmodels.FeedbackTrace(s)
		n := len(feedback.Targets(ft))
		total += n
		switch r, ok := st.Reusable(s.ID, s.Revision, feedback.InputHash(ft), st.Plan.Model, hash); {
		case recorded[s.ID]:
			done += n
		case ok:
			cp := r.RewardModelFeedbackExtractedV1
			cp.Attempt, cp.WorkerID, cp.ReusedFrom, cp.Usage = cmd.Attempt, cmd.WorkerID, r.EventID, []events.LLMUsage{}
			reused = append(reused, recordEvents(stream, st.OwnerID, cp)...)
			have += rewardmodels.PairFindings(cp)
			done += n
		default:
			in.Traces = append(in.Traces, ft)
		}
	}
	in.PairsNeeded = max(0, st.Requested.MaxPairs-have)
	raw, err := json.Marshal(in)
	if err != nil {
		return ExtractionClaim{}, err
	}
	key := jobs.ExtractionInputsKey(st.OwnerID, st.ID, cmd.Attempt)
	if err := c.store.Blobs().Put(ctx, key, raw); err != nil {
		return ExtractionClaim{}, fmt.Errorf("store the extraction inputs: %w", err)
	}
	started := events.RewardModelExtractionStartedV1{ModelID: st.ID, Attempt: cmd.Attempt, WorkerID: cmd.WorkerID, LeaseSeconds: int(cmd.Lease / time.Second),
		ClassifierModel: st.Plan.Model, PromptVersion: feedback.PromptVersion, TargetsTotal: total, InputsKey: key}
	evs := []events.New{{ID: newID(), Stream: stream, OwnerID: st.OwnerID, Type: events.RewardModelExtractionStarted, Payload: started}}
	evs = append(evs, reused...)
	if done > 0 {
		evs = append(evs, events.New{ID: newID(), Stream: stream, OwnerID: st.OwnerID, Type: events.RewardModelExtractionProgressed,
			Payload: events.RewardModelExtractionProgressedV1{ModelID: st.ID, Attempt: cmd.Attempt, WorkerID: cmd.WorkerID, TargetsDone: done}})
	}
	r, err := c.append(ctx, WorkerActor(cmd.WorkerID), map[string]int64{stream: st.Version}, evs)
	if err != nil {
		return ExtractionClaim{}, err
	}
	return ExtractionClaim{Result: r, ExtractionClaim: jobs.ExtractionClaim{ModelID: st.ID, OwnerID: st.OwnerID, InputsKey: key, ClassifierModel: st.Plan.Model,
		Attempt: cmd.Attempt, LeaseSeconds: started.LeaseSeconds, TargetsTotal: total, TargetsDone: done}}, nil
}

// RecordFeedback appends one trace's findings after checking every one
// against the trace as the model was requested on it (targets, evidence,
// verbatim quotes, reviewed alternatives). A malformed report changes
// nothing.
type RecordFeedback struct {
	WorkerID string
	ModelID  string
	Feedback events.RewardModelFeedbackExtractedV1
}

// RecordFeedbackHandler runs RecordFeedback.
type RecordFeedbackHandler struct{ *Streams }

func (c RecordFeedbackHandler) Handle(ctx context.Context, cmd RecordFeedback) (Result, error) {
	p := cmd.Feedback
	return retryOnConflict(func() (Result, error) {
		st, err := c.loadModel(ctx, "", cmd.ModelID)
		if err != nil {
			return Result{}, err
		}
		if err := rewardmodels.CheckExtractionHolder(st, p.Attempt, cmd.WorkerID); err != nil {
			return Result{}, err
		}
		var tr *feedback.Trace
		if slices.Contains(st.Requested.TraceIDs, p.TraceID) {
			asOf, err := c.QueuedAt(ctx, st)
			if err != nil {
				return Result{}, err
			}
			stream := events.TraceStream(p.TraceID)
			loaded, err := c.store.LoadStreamsAsOf(ctx, []string{stream}, asOf)
			if err != nil {
				return Result{}, err
			}
			s, err := traces.Fold("", loaded[stream])
			if err != nil {
				return Result{}, err
			}
			if s.Exists {
				tr = new(rewardmodels.FeedbackTrace(s))
			}
		}
		p.ModelID, p.WorkerID = st.ID, cmd.WorkerID
		if tr != nil {
			p.InputHash = feedback.InputHash(*tr) // computed here, from the log, never taken from the worker
		}
		if p.Findings == nil {
			p.Findings = []events.Finding{}
		}
		if p.Usage == nil {
			p.Usage = []events.LLMUsage{}
		}
		if err := rewardmodels.DecideRecordFeedback(st, cmd.WorkerID, p, tr); err != nil {
			return Result{}, err
		}
		stream := events.RewardModelStream(st.ID)
		return c.append(ctx, WorkerActor(cmd.WorkerID), map[string]int64{stream: st.Version}, recordEvents(stream, st.OwnerID, p))
	})
}

// FinishExtraction ends the holder's extraction. With errMsg (malformed
// answers, an unreachable provider) the attempt fails in the same append;
// otherwise the dispatcher builds the dataset next.
type FinishExtraction struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Error    string
}

// FinishExtractionHandler runs FinishExtraction.
type FinishExtractionHandler struct{ *Streams }

func (c FinishExtractionHandler) Handle(ctx context.Context, cmd FinishExtraction) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		st, err := c.loadModel(ctx, "", cmd.ModelID)
		if err != nil {
			return Result{}, err
		}
		fin, fail, err := rewardmodels.DecideFinishExtraction(st, cmd.Attempt, cmd.WorkerID, cmd.Error)
		if err != nil {
			return Result{}, err
		}
		var extra []events.New
		if fail != nil {
			extra = append(extra, events.New{ID: newID(), Stream: events.RewardModelStream(st.ID), OwnerID: st.OwnerID,
				Type: events.RewardModelTrainingFailed, Payload: *fail})
		}
		return c.appendToModel(ctx, WorkerActor(cmd.WorkerID), st, events.RewardModelExtractionFinished, fin, extra...)
	})
}

// ExpireExtractionLease requeues a running extraction whose worker stopped
// renewing its lease before now (Postgres's clock, as for training); the
// dispatch projection then publishes the job again. The attempt's
// MaxLostRuns-th lost run fails the model instead. A live lease or an
// extraction that is not running appends nothing (an empty Result).
type ExpireExtractionLease struct {
	ModelID string
	Now     time.Time
}

// ExpireExtractionLeaseHandler runs ExpireExtractionLease.
type ExpireExtractionLeaseHandler struct{ *Streams }

func (c ExpireExtractionLeaseHandler) Handle(ctx context.Context, cmd ExpireExtractionLease) (Result, error) {
	return c.onModel(ctx, cmd.ModelID, Actor{}, func(st rewardmodels.State) (string, any, error) {
		requeue, fail, _ := rewardmodels.DecideExtractionLeaseExpiry(st, cmd.Now)
		return expiry(events.RewardModelExtractionRequeued, requeue, events.RewardModelTrainingFailed, fail)
	})
}

// HandBackExtraction returns the holder's running extraction to the queue
// (the worker is stopping); its findings stay and the dispatch projection
// publishes the job again.
type HandBackExtraction struct {
	WorkerID string
	ModelID  string
	Attempt  int
	Reason   string
}

// HandBackExtractionHandler runs HandBackExtraction.
type HandBackExtractionHandler struct{ *Streams }

func (c HandBackExtractionHandler) Handle(ctx context.Context, cmd HandBackExtraction) (Result, error) {
	return c.onModel(ctx, cmd.ModelID, WorkerActor(cmd.WorkerID), func(st rewardmodels.State) (string, any, error) {
		p, err := rewardmodels.DecideExtractionHandBack(st, cmd.Attempt, cmd.WorkerID, cmd.Reason)
		return events.RewardModelExtractionRequeued, p, err
	})
}

// ExtractionClaim is the answer to a claim (the job contract's) with the
// claim's append.
type ExtractionClaim struct {
	Result
	jobs.ExtractionClaim
}

// extractionProgress renews the holder's lease and records targets done.
func (c *Streams) extractionProgress(ctx context.Context, workerID, modelID string, attempt, done int) (Result, error) {
	return c.onModel(ctx, modelID, WorkerActor(workerID), func(st rewardmodels.State) (string, any, error) {
		return events.RewardModelExtractionProgressed, events.RewardModelExtractionProgressedV1{ModelID: st.ID, Attempt: attempt,
			WorkerID: workerID, TargetsDone: done}, rewardmodels.CheckExtractionHolder(st, attempt, workerID)
	})
}

// recordEvents are a trace's findings, one finding_recorded event each,
// then the feedback_extracted record that closes them.
func recordEvents(stream, ownerID string, p events.RewardModelFeedbackExtractedV1) []events.New {
	var evs []events.New
	p.FindingIDs = []string{}
	for _, f := range p.Findings {
		evs = append(evs, events.New{ID: newID(), Stream: stream, OwnerID: ownerID, Type: events.RewardModelFindingRecorded,
			Payload: events.RewardModelFindingRecordedV1{ModelID: p.ModelID, Attempt: p.Attempt, TraceID: p.TraceID, TraceRevision: p.TraceRevision, Finding: f}})
		p.FindingIDs = append(p.FindingIDs, f.ID)
	}
	p.Findings = nil
	return append(evs, events.New{ID: newID(), Stream: stream, OwnerID: ownerID, Type: events.RewardModelFeedbackExtracted, Payload: p})
}

var _ = onKind(jobs.KindExtract, (*Streams).extractionJob)

// extractionJob is KindExtract: an attempt's feedback extraction, claimed
// under a lease renewed with the targets done; each trace's findings are a
// report, checked against the source here by the same domain rules the
// worker used; a hand-back keeps the findings for the next worker.
func (c *Streams) extractionJob() jobActions {
	type call[B any] = jobCall[jobs.ExtractJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			x, err := ClaimExtractionHandler{c}.Handle(ctx, ClaimExtraction{WorkerID: r.Worker, ModelID: r.ID, Attempt: r.Job.Attempt, Lease: r.Lease})
			if err != nil {
				return nil, err
			}
			return x.ExtractionClaim, nil
		}),
		jobs.Beat: onJob(func(ctx context.Context, r call[jobs.ExtractionProgress]) (any, error) {
			return jobAck(c.extractionProgress(ctx, r.Worker, r.ID, r.Job.Attempt, r.Body.TargetsDone))
		}),
		// The record's own worker_id is overwritten by the call's: the
		// API, not the worker, decides what the stored event says.
		jobs.Report: onJob(func(ctx context.Context, r call[events.RewardModelFeedbackExtractedV1]) (any, error) {
			return jobAck(RecordFeedbackHandler{c}.Handle(ctx, RecordFeedback{WorkerID: r.Worker, ModelID: r.ID, Feedback: r.Body}))
		}),
		jobs.Finish: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(FinishExtractionHandler{c}.Handle(ctx, FinishExtraction{WorkerID: r.Worker, ModelID: r.ID, Attempt: r.Job.Attempt}))
		}),
		jobs.Fail: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(FinishExtractionHandler{c}.Handle(ctx, FinishExtraction{WorkerID: r.Worker, ModelID: r.ID, Attempt: r.Job.Attempt, Error: cmp.Or(r.Error, noLog)}))
		}),
		jobs.HandBack: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(HandBackExtractionHandler{c}.Handle(ctx, HandBackExtraction{WorkerID: r.Worker, ModelID: r.ID, Attempt: r.Job.Attempt, Reason: r.Reason}))
		}),
	}
}
