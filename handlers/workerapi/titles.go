package workerapi

import (
	"context"

	"github.com/criticml/critic/domain/jobs"
)

// titles is KindTitle: the claim answers a trace's bounded excerpt (Needed
// false when the revision is stale or titled: a duplicate job costs no
// model call) and the result becomes trace.titled.
func (a *API) titles() actions {
	type c[B any] = call[jobs.TitleJob, B]
	return actions{
		jobs.Claim: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			s, err := a.cmds.TitleSourceOf(ctx, r.ID, r.Job.Revision)
			if err != nil {
				return nil, err
			}
			return jobs.TitleSource{TraceID: s.TraceID, Revision: s.Revision, Input: s.Input, Needed: s.Needed}, nil
		}),
		jobs.Finish: on(func(ctx context.Context, r c[jobs.TitleReport]) (any, error) {
			res, err := a.cmds.RecordTitle(ctx, r.Worker, r.ID, r.Job.Revision, r.Body.Title, r.Body.Model, r.Body.Usage)
			return jobs.TitleRecorded{Recorded: err == nil && res.LastEventID != ""}, err
		}),
	}
}
