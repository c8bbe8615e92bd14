package commands

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
)

// The commands in this file are what the worker service runs for an
// extraction worker (spec 001 "Personal reward model training"): the worker
// claims an attempt's extraction, reads its inputs from the blob store,
// calls the feedback model and reports each trace's findings, which are
// appended here — before the dataset and its minimum-pair check, so a model
// that fails keeps its learning report.

// ExtractionClaim is the answer to a claim (the job contract's) with the
// claim's append.
type ExtractionClaim struct {
	Result
	jobs.ExtractionClaim
}

func pairFindings(r events.RewardModelFeedbackExtractedV1) int {
	n := 0
	for _, f := range r.Findings {
		if f.Outcome == events.OutcomePair {
			n++
		}
	}
	return n
}

// extractionProgress renews the holder's lease and records targets done.
func (c *Streams) extractionProgress(ctx context.Context, workerID, modelID string, attempt, done int) (Result, error) {
	return c.onModel(ctx, modelID, workerActor(workerID), func(st rewardmodels.State) (string, any, error) {
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
			msg := r.Error
			if msg == "" {
				msg = "the worker reported a failure without a log"
			}
			return jobAck(FinishExtractionHandler{c}.Handle(ctx, FinishExtraction{WorkerID: r.Worker, ModelID: r.ID, Attempt: r.Job.Attempt, Error: msg}))
		}),
		jobs.HandBack: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(HandBackExtractionHandler{c}.Handle(ctx, HandBackExtraction{WorkerID: r.Worker, ModelID: r.ID, Attempt: r.Job.Attempt, Reason: r.Reason}))
		}),
	}
}
