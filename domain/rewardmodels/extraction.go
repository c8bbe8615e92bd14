package rewardmodels

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
	"github.com/criticml/critic/domain/jobs/lease"
)

// Extraction is an attempt's feedback extraction as its events tell it.
type Extraction struct {
	Attempt int
	// Job is the extraction's claim (its Lost stay empty: lost runs
	// count on the model's lease, training's and extraction's together).
	lease.Job
	ClassifierModel string
	TargetsTotal    int
	TargetsDone     int
	InputsKey       string
	Finished        bool
	Error           string
}

// RecordedFeedback is a feedback record and the event that carried it.
type RecordedFeedback struct {
	EventID string
	events.RewardModelFeedbackExtractedV1
}

// ConfigOf is a request's training_config with defaults: requests made
// before the field existed read as feedback, input version 1.
func ConfigOf(r events.RewardModelRequestedV1) events.TrainingConfig {
	c := events.TrainingConfig{AnnotationSource: events.SourceFeedback, InputVersion: 1}
	if r.TrainingConfig != nil {
		c = *r.TrainingConfig
	}
	return c
}

// NeedsExtraction: the current attempt learns from feedback and the
// deployment has a feedback model for it.
func (s State) NeedsExtraction() bool {
	return s.Config.AnnotationSource == events.SourceFeedback && s.Plan.Model != ""
}

// ExtractionDone: the current attempt's extraction finished without error.
func (s State) ExtractionDone() bool {
	return s.Extraction != nil && s.Extraction.Attempt == s.Attempt && s.Extraction.Finished && s.Extraction.Error == ""
}

// FeedbackRecorded says whether the current attempt has a learning report:
// findings recorded, or an extraction that finished. Without one the
// model's feedback is null.
func (s State) FeedbackRecorded() bool {
	return len(s.Extracted) > 0 || (s.Extraction != nil && s.Extraction.Attempt == s.Attempt && s.Extraction.Finished)
}

func (s *State) applyExtraction(e events.Envelope) error {
	switch e.Type {
	case events.RewardModelExtractionStarted:
		var p events.RewardModelExtractionStartedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if p.Attempt == s.Attempt {
			s.Extraction = &Extraction{Attempt: p.Attempt, ClassifierModel: p.ClassifierModel, TargetsTotal: p.TargetsTotal, InputsKey: p.InputsKey}
			s.Extraction.Claimed(p.WorkerID, p.LeaseSeconds, e.RecordedAt)
		}
	case events.RewardModelExtractionProgressed:
		var p events.RewardModelExtractionProgressedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if x := s.Extraction; x != nil && x.Attempt == p.Attempt {
			x.TargetsDone = p.TargetsDone
			x.Beat(e.RecordedAt)
		}
	case events.RewardModelFindingRecorded:
		var p events.RewardModelFindingRecordedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		s.pending = append(s.pending, p)
	case events.RewardModelFeedbackExtracted:
		var p events.RewardModelFeedbackExtractedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if len(p.Findings) == 0 && len(p.FindingIDs) > 0 {
			p.Findings = s.takePending(p)
		}
		s.Recorded = append(s.Recorded, RecordedFeedback{EventID: e.ID, RewardModelFeedbackExtractedV1: p})
		if p.Attempt == s.Attempt {
			s.Extracted = append(s.Extracted, p)
			if x := s.Extraction; x != nil && x.Attempt == p.Attempt {
				x.Beat(e.RecordedAt)
			}
		}
	case events.RewardModelExtractionFinished:
		var p events.RewardModelExtractionFinishedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if x := s.Extraction; x != nil && x.Attempt == p.Attempt {
			x.Finished, x.Error = true, p.Error
		}
	case events.RewardModelExtractionRequeued:
		var p events.RewardModelExtractionRequeuedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		// Nobody holds it now; the recorded findings (Extracted) stay.
		if x := s.Extraction; x != nil && x.Attempt == p.Attempt && !x.Finished {
			s.Extraction = nil
			if p.Reason == events.RequeueLeaseExpired {
				// A requeue recorded before the detail was kept names none.
				s.Lost = append(s.Lost, cmp.Or(p.Detail, "worker "+p.WorkerID+" stopped renewing its feedback-extraction lease"))
			}
		}
	}
	return nil
}

// extractionLapse words a lost extraction run; the failure is training's.
var extractionLapse = lease.Rules{Silence: "sent no feedback-extraction heartbeat for %s (last at %s)",
	Job: trainingLapse.Job, Lapse: trainingLapse.Lapse, Remedy: trainingLapse.Remedy}

// DecideExtractionLeaseExpiry handles a running extraction whose worker
// stopped renewing its lease before now (ok false: nothing to do — none is
// running, or its lease is alive). It goes back to the queue (the dispatch
// projection republishes the job, so a worker handed the message while the
// lease was alive could skip it instead of waiting), or, once the attempt
// lost lease.MaxLostRuns runs (extraction and training together), the
// model fails as training does.
func DecideExtractionLeaseExpiry(s State, now time.Time) (requeue *events.RewardModelExtractionRequeuedV1, fail *events.RewardModelTrainingFailedV1, ok bool) {
	x := s.Extraction
	if s.Status != StatusQueued || s.Dataset != nil || x == nil || x.Attempt != s.Attempt || x.Finished {
		return nil, nil, false
	}
	held := x.Job
	held.Lost = s.Lost
	out, ok := extractionLapse.Expire(held, now)
	switch {
	case !ok:
		return nil, nil, false
	case out.Fail != "":
		return nil, lostRunsFailure(s, out.Fail), true
	}
	return &events.RewardModelExtractionRequeuedV1{ModelID: s.ID, Attempt: x.Attempt, WorkerID: x.WorkerID,
		Reason: events.RequeueLeaseExpired, Detail: out.Detail}, nil, true
}

// takePending returns the finding events that precede a record, in order.
func (s *State) takePending(p events.RewardModelFeedbackExtractedV1) []events.Finding {
	byID := map[string]events.Finding{}
	var rest []events.RewardModelFindingRecordedV1
	for _, f := range s.pending {
		if f.Attempt == p.Attempt && f.TraceID == p.TraceID {
			byID[f.Finding.ID] = f.Finding
		} else {
			rest = append(rest, f)
		}
	}
	s.pending = rest
	out := make([]events.Finding, 0, len(p.FindingIDs))
	for _, id := range p.FindingIDs {
		if f, ok := byID[id]; ok {
			out = append(out, f)
		}
	}
	return out
}

// Reusable finds an earlier record for the same trace input (revision,
// comments, ratings), classifier model, prompt version and criteria that
// assessed every target: a retry
// copies it instead of paying for the same answers again.
func (s State) Reusable(traceID string, revision int, inputHash, model, configHash string) (RecordedFeedback, bool) {
	for _, r := range slices.Backward(s.Recorded) {
		if r.TraceID == traceID && r.TraceRevision == revision && r.InputHash == inputHash && r.ClassifierModel == model &&
			r.PromptVersion == feedback.PromptVersion && r.ConfigHash == configHash && !r.Partial {
			return r, true
		}
	}
	return RecordedFeedback{}, false
}

// ExtractionHeld is the conflict code of a claim refused because another
// worker's lease is live: the worker that got the message skips it; if the
// holder died, the lease sweep requeues the extraction once the lease has
// run out and the job is published again.
const ExtractionHeld = "extraction_held"

// DecideClaimExtraction lets one worker extract an attempt's feedback: the
// model must be queued for that attempt, need extraction and have no
// dataset yet; a claim held by another worker blocks it until its lease
// runs out (the worker died; what it recorded stays and is not redone).
func DecideClaimExtraction(s State, attempt int, workerID string, leaseFor time.Duration, now time.Time) error {
	if s.Status != StatusQueued || s.Attempt != attempt || s.Dataset != nil || !s.NeedsExtraction() {
		return lease.NotClaimable("model %s attempt %d has no extraction to claim (status %s, attempt %d)", s.ID, attempt, s.Status, s.Attempt)
	}
	if x := s.Extraction; x != nil && x.Attempt == attempt {
		if x.Finished {
			return lease.NotClaimable("model %s attempt %d: extraction already finished", s.ID, attempt)
		}
		if x.WorkerID != workerID && now.Before(x.LastBeat.Add(x.Lease)) {
			return &domain.ConflictError{Code: ExtractionHeld, Message: fmt.Sprintf("model %s attempt %d: worker %s is extracting (lease until %s)",
				s.ID, attempt, x.WorkerID, x.LastBeat.Add(x.Lease).UTC().Format(time.RFC3339))}
		}
	}
	return nil
}

// DecideExtractionHandBack returns the holder's running extraction to the
// queue (its worker is stopping): the next worker continues it at once,
// with the findings recorded so far, instead of after the lease.
func DecideExtractionHandBack(s State, attempt int, workerID, detail string) (events.RewardModelExtractionRequeuedV1, error) {
	if err := CheckExtractionHolder(s, attempt, workerID); err != nil {
		return events.RewardModelExtractionRequeuedV1{}, err
	}
	return events.RewardModelExtractionRequeuedV1{ModelID: s.ID, Attempt: attempt, WorkerID: workerID, Reason: events.RequeueHandedBack,
		Detail: lease.HandBackDetail(workerID, detail)}, nil
}

// CheckExtractionHolder: workerID holds the attempt's running extraction.
func CheckExtractionHolder(s State, attempt int, workerID string) error {
	x := s.Extraction
	if s.Status != StatusQueued || s.Attempt != attempt || x == nil || x.Attempt != attempt || x.WorkerID != workerID || x.Finished {
		return lease.NotClaimable("worker %s does not hold the extraction of model %s attempt %d", workerID, s.ID, attempt)
	}
	return nil
}

// DecideRecordFeedback checks a worker's record for one trace: the holder
// reports, once per trace and attempt, on a selected trace, and every
// finding passes feedback.Validate against the trace's targets.
func DecideRecordFeedback(s State, workerID string, p events.RewardModelFeedbackExtractedV1, tr *feedback.Trace) error {
	if err := CheckExtractionHolder(s, p.Attempt, workerID); err != nil {
		return err
	}
	if tr == nil {
		return domain.Invalid("trace %s is not one of the model's selected traces", p.TraceID)
	}
	if slices.ContainsFunc(s.Extracted, func(r events.RewardModelFeedbackExtractedV1) bool { return r.TraceID == p.TraceID }) {
		return lease.NotClaimable("model %s attempt %d already has findings for trace %s", s.ID, p.Attempt, p.TraceID)
	}
	if p.TraceRevision != tr.Revision {
		return domain.Invalid("findings for trace %s revision %d, but the model was requested on revision %d", p.TraceID, p.TraceRevision, tr.Revision)
	}
	if p.ClassifierModel != s.Plan.Model {
		return domain.Invalid("findings by %q; the model was queued for feedback model %q", p.ClassifierModel, s.Plan.Model)
	}
	if p.PromptVersion != feedback.PromptVersion {
		return domain.Invalid("findings with prompt version %q; this API runs %q", p.PromptVersion, feedback.PromptVersion)
	}
	byStep := map[int]feedback.Target{}
	for _, t := range feedback.Targets(*tr) {
		byStep[t.StepIndex] = t
	}
	seen := map[string]bool{}
	for _, f := range p.Findings {
		t, ok := byStep[f.StepIndex]
		if !ok {
			return domain.Invalid("finding %s: step %d of trace %s is not an assistant response or tool call", f.ID, f.StepIndex, p.TraceID)
		}
		if seen[f.ID] {
			return domain.Invalid("finding %s is reported twice", f.ID)
		}
		seen[f.ID] = true
		if err := feedback.Validate(t, f); err != nil {
			return domain.Invalid("%v", err)
		}
	}
	return nil
}

// DecideFinishExtraction ends the holder's extraction; with errMsg the
// attempt fails too (returned as the second event).
func DecideFinishExtraction(s State, attempt int, workerID, errMsg string) (events.RewardModelExtractionFinishedV1, *events.RewardModelTrainingFailedV1, error) {
	if err := CheckExtractionHolder(s, attempt, workerID); err != nil {
		return events.RewardModelExtractionFinishedV1{}, nil, err
	}
	fin := events.RewardModelExtractionFinishedV1{ModelID: s.ID, Attempt: attempt, WorkerID: workerID, Error: errMsg}
	if errMsg == "" {
		return fin, nil, nil
	}
	fail, err := DecideFail(s, attempt, "", events.FailureExtraction, fmt.Sprintf("feedback extraction failed: %s", errMsg))
	if err != nil {
		return fin, nil, err
	}
	return fin, &fail, nil
}
