package worker

import (
	"context"
	"errors"
	"time"

	"github.com/criticml/critic/domain/jobs"
)

// scoreBatches runs background scoring's batches (spec 001 "Learned action
// credit"): every trace of the batch with one loaded checkpoint (the
// worker keeps it loaded between traces and jobs), each trace's result —
// its action scores and trace score, or its error — reported as soon as it
// exists, so the first trace's scores do not wait for the rest. The
// finish that follows fails any run left without a result.
var scoreBatches = register(Kind[jobs.ScoreBatchJob, jobs.ScoreBatchClaim, struct{}]{
	Kind: jobs.KindScoreBatch, What: "scoring batch", IDKey: "batch_id", HandBack: true,
	Claimed: func(c jobs.ScoreBatchClaim) []any { return []any{"model_id", c.ModelID, "traces", len(c.Runs)} },
	Fail: func(j *Job[jobs.ScoreBatchClaim], err error) (string, any) {
		j.Log.Error("scoring batch failed", "error", err)
		return truncate(err.Error(), ErrorTailChars), nil
	},
	Work: func(ctx context.Context, j *Job[jobs.ScoreBatchClaim]) (struct{}, error) {
		for _, run := range j.Args.Runs {
			start := time.Now()
			res, err := j.w.score(ctx, j.Log, run.ItemsKey)
			if ctx.Err() != nil {
				return struct{}{}, ctx.Err()
			}
			report := jobs.ScoreBatchReport{TraceID: run.TraceID, RunID: run.RunID, ScoringFinished: res}
			if err != nil {
				j.Log.Warn("scoring a trace of the batch failed", "trace_id", run.TraceID, "error", err)
				report = jobs.ScoreBatchReport{TraceID: run.TraceID, RunID: run.RunID, Error: truncate(err.Error(), ErrorTailChars)}
			} else {
				j.w.cfg.Observer.Scored(len(res.ActionScores)+1, time.Since(start))
			}
			var ack jobs.Ack
			if err := j.Report(ctx, report, &ack); err != nil {
				if errors.Is(err, ErrNotClaimable) {
					// This trace's run moved on (the lease sweep requeued
					// it, or the trace changed): the others still count.
					j.Log.Warn("the API refused a trace's result", "trace_id", run.TraceID, "error", err)
					continue
				}
				return struct{}{}, err
			}
		}
		j.Log.Info("scored batch", "traces", len(j.Args.Runs))
		return struct{}{}, nil
	},
})
