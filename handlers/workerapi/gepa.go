package workerapi

import (
	"context"
	"encoding/json"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
)

// gepa is KindGepa: a GEPA run under a lease renewed with its progress;
// every evaluated candidate is a report (gepa_run.candidate_evaluated) and
// the result is result.json.
func (a *API) gepa() actions {
	type c[B any] = call[jobs.GepaJob, B]
	return actions{
		jobs.Claim: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return a.cmds.ClaimGepa(ctx, r.Worker, r.ID, a.lease)
		}),
		jobs.Beat: on(func(ctx context.Context, r c[events.GepaProgress]) (any, error) {
			return ack(a.cmds.GepaHeartbeat(ctx, r.Worker, r.ID, r.Body))
		}),
		jobs.Report: on(func(ctx context.Context, r c[events.GepaRunCandidateEvaluatedV1]) (any, error) {
			return ack(a.cmds.RecordGepaCandidate(ctx, r.Worker, r.ID, r.Body))
		}),
		jobs.Finish: on(func(ctx context.Context, r c[json.RawMessage]) (any, error) {
			return ack(a.cmds.SucceedGepa(ctx, r.Worker, r.ID, r.Body))
		}),
		jobs.Fail: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return ack(a.cmds.FailGepa(ctx, r.Worker, r.ID, r.Error))
		}),
		jobs.HandBack: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return ack(a.cmds.HandBackGepa(ctx, r.Worker, r.ID, r.Reason))
		}),
	}
}
