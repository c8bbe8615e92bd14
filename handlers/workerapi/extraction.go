package workerapi

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// extraction is KindExtract: an attempt's feedback extraction, claimed
// under a lease renewed with the targets done; each trace's findings are a
// report, checked against the source here by the same domain rules the
// worker used; a hand-back keeps the findings for the next worker.
func (a *API) extraction() actions {
	type c[B any] = call[jobs.ExtractJob, B]
	return actions{
		jobs.Claim: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			x, err := a.cmds.ClaimExtraction(ctx, r.Worker, r.ID, r.Job.Attempt, a.lease)
			if err != nil {
				return nil, err
			}
			return jobs.ExtractionClaim{ModelID: x.ModelID, OwnerID: x.OwnerID, Attempt: x.Attempt, InputsKey: x.InputsKey,
				ClassifierModel: x.ClassifierModel, LeaseSeconds: x.LeaseSeconds, TargetsTotal: x.TargetsTotal, TargetsDone: x.TargetsDone}, nil
		}),
		jobs.Beat: on(func(ctx context.Context, r c[jobs.ExtractionProgress]) (any, error) {
			return ack(a.cmds.ExtractionProgress(ctx, r.Worker, r.ID, r.Job.Attempt, r.Body.TargetsDone))
		}),
		// The record's own worker_id is overwritten by the call's: the
		// API, not the worker, decides what the stored event says.
		jobs.Report: on(func(ctx context.Context, r c[events.RewardModelFeedbackExtractedV1]) (any, error) {
			return ack(a.cmds.RecordFeedback(ctx, r.Worker, r.ID, r.Body))
		}),
		jobs.Finish: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return ack(a.cmds.FinishExtraction(ctx, r.Worker, r.ID, r.Job.Attempt, ""))
		}),
		jobs.Fail: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			msg := r.Error
			if msg == "" {
				msg = "the worker reported a failure without a log"
			}
			return ack(a.cmds.FinishExtraction(ctx, r.Worker, r.ID, r.Job.Attempt, msg))
		}),
		jobs.HandBack: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return ack(a.cmds.HandBackExtraction(ctx, r.Worker, r.ID, r.Job.Attempt, r.Reason))
		}),
	}
}
