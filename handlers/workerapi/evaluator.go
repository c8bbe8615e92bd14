package workerapi

import (
	"context"

	"github.com/criticml/critic/domain/jobs"
)

// evaluatorCandidates is KindEvaluatorTrain: a shared-evaluator candidate
// (only a queued one can be claimed) under a lease; its result is the
// trained report with the benchmark margins the release gates read.
func (a *API) evaluatorCandidates() actions {
	type c[B any] = call[jobs.EvaluatorTrainJob, B]
	return actions{
		jobs.Claim: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return a.cmds.ClaimCandidate(ctx, r.Worker, r.ID, a.lease)
		}),
		jobs.Beat: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return ack(a.cmds.CandidateHeartbeat(ctx, r.Worker, r.ID))
		}),
		jobs.Finish: on(func(ctx context.Context, r c[jobs.EvaluatorCandidateSucceeded]) (any, error) {
			return ack(a.cmds.CompleteCandidate(ctx, r.Worker, r.ID, r.Body))
		}),
		jobs.Fail: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return ack(a.cmds.FailCandidate(ctx, r.Worker, r.ID, r.Error))
		}),
		jobs.HandBack: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return ack(a.cmds.HandBackCandidate(ctx, r.Worker, r.ID, r.Reason))
		}),
	}
}

// evaluatorScoring is KindEvaluatorScore: score a trace's actions with the
// live release; the result (and a failure) names the revision and release
// the claim answered, which must still be current.
func (a *API) evaluatorScoring() actions {
	type c[B any] = call[jobs.EvaluatorScoreJob, B]
	return actions{
		jobs.Claim: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return a.cmds.ClaimEvaluatorScoring(ctx, r.ID)
		}),
		jobs.Finish: on(func(ctx context.Context, r c[jobs.EvaluatorScored]) (any, error) {
			r.Body.WorkerID = r.Worker
			return ack(a.cmds.RecordEvaluatorScores(ctx, r.ID, r.Body))
		}),
		jobs.Fail: on(func(ctx context.Context, r c[jobs.EvaluatorScoringRequest]) (any, error) {
			r.Body.WorkerID = r.Worker
			return ack(a.cmds.FailEvaluatorScoring(ctx, r.ID, jobs.EvaluatorScoringFailed{EvaluatorScoringRequest: r.Body, Error: r.Error}))
		}),
	}
}
