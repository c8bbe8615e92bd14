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
// exists, so the first trace's scores do not wait for the rest. A report
// travels while the next trace is scored (one at a time, in order): the
// API's append and the round trip then cost the model no idle time. No
// finish follows (NoFinish): a batch that ends well has reported every
// run, so the API's finish, which fails the runs left without a result,
// would have nothing to do — it cost a round trip and two reads between
// one batch and the next claim. A batch that stops early reports its
// failure or hands its runs back, as before.
var scoreBatches = register(Kind[jobs.ScoreBatchJob, jobs.ScoreBatchClaim, struct{}]{
	Kind: jobs.KindScoreBatch, What: "scoring batch", IDKey: "batch_id", HandBack: true, NoFinish: true,
	Claimed: func(c jobs.ScoreBatchClaim) []any { return []any{"model_id", c.ModelID, "traces", len(c.Runs)} },
	Fail:    failWithError[jobs.ScoreBatchClaim]("scoring batch failed"),
	Work: func(ctx context.Context, j *Job[jobs.ScoreBatchClaim]) (struct{}, error) {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		reports := make(chan jobs.ScoreBatchReport, len(j.Args.Runs))
		sent := make(chan error, 1)
		go func() { sent <- sendBatchReports(ctx, j, reports, cancel) }()
		for _, run := range j.Args.Runs {
			start := time.Now()
			res, err := j.w.score(ctx, j.Log, run.ItemsKey)
			if ctx.Err() != nil {
				break
			}
			report := jobs.ScoreBatchReport{TraceID: run.TraceID, RunID: run.RunID, ScoringFinished: res}
			if err != nil {
				j.Log.Warn("scoring a trace of the batch failed", "trace_id", run.TraceID, "error", err)
				report = jobs.ScoreBatchReport{TraceID: run.TraceID, RunID: run.RunID, Error: truncate(err.Error(), ErrorTailChars)}
			} else {
				j.w.cfg.Observer.Scored(len(res.ActionScores)+1, time.Since(start))
			}
			reports <- report
		}
		close(reports)
		if err := <-sent; err != nil {
			return struct{}{}, err
		}
		if err := context.Cause(ctx); err != nil {
			return struct{}{}, err
		}
		j.Log.Info("scored batch", "traces", len(j.Args.Runs))
		return struct{}{}, nil
	},
})

// sendBatchReports reports a batch's results in order until reports is
// closed; a report the API cannot take (other than a run that moved on)
// stops the batch through cancel.
func sendBatchReports(ctx context.Context, j *Job[jobs.ScoreBatchClaim], reports <-chan jobs.ScoreBatchReport, cancel context.CancelCauseFunc) error {
	for report := range reports {
		var ack jobs.Ack
		err := j.Report(ctx, report, &ack)
		if errors.Is(err, ErrNotClaimable) {
			// This trace's run moved on (the lease sweep requeued it, or
			// the trace changed): the others still count.
			j.Log.Warn("the API refused a trace's result", "trace_id", report.TraceID, "error", err)
			continue
		}
		if err != nil {
			cancel(err)
			for range reports { // let the scoring loop finish
			}
			return err
		}
	}
	return nil
}
