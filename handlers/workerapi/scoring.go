package workerapi

import (
	"context"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// scoring is KindScore: a scoring run of one (trace, model); its result
// appends the action scores. Runs send no heartbeat: the sweep times them.
func (a *API) scoring() actions {
	type c[B any] = call[jobs.ScoreJob, B]
	return actions{
		jobs.Claim: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			key, err := a.cmds.ClaimScoring(ctx, r.Worker, r.Job.TraceID, r.Job.ModelID, r.ID)
			return jobs.ScoringClaim{ItemsKey: key}, err
		}),
		jobs.Finish: on(func(ctx context.Context, r c[jobs.ScoringFinished]) (any, error) {
			scores := make([]events.ActionScore, len(r.Body.ActionScores))
			for i, s := range r.Body.ActionScores {
				scores[i] = events.ActionScore{TraceID: s.TraceID, StepID: s.StepID, Score: s.Score, Credit: s.Credit}
			}
			return ack(a.cmds.FinishScoring(ctx, r.Worker, r.Job.TraceID, r.Job.ModelID, r.ID, scores, ""))
		}),
		jobs.Fail: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			msg := r.Error
			if msg == "" {
				msg = "the worker reported a failure without a log"
			}
			return ack(a.cmds.FinishScoring(ctx, r.Worker, r.Job.TraceID, r.Job.ModelID, r.ID, nil, msg))
		}),
		jobs.HandBack: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return ack(a.cmds.HandBackScoring(ctx, r.Worker, r.Job.TraceID, r.Job.ModelID, r.ID, r.Reason))
		}),
	}
}
