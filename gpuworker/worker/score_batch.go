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
// exists. The first trace is scored alone, so its scores do not wait for
// the rest; the others are scored together in one engine call (its
// length-bucketed batches use every core, where one trace's few texts
// leave a 2-core machine half idle), their items read while the first is
// scored. Reports travel while the next texts are scored: the API's
// append and the round trip then cost the model no idle time. The finish
// that follows fails any run left without a result.
var scoreBatches = register(Kind[jobs.ScoreBatchJob, jobs.ScoreBatchClaim, struct{}]{
	Kind: jobs.KindScoreBatch, What: "scoring batch", IDKey: "batch_id", HandBack: true,
	Claimed: func(c jobs.ScoreBatchClaim) []any { return []any{"model_id", c.ModelID, "traces", len(c.Runs)} },
	Fail: func(j *Job[jobs.ScoreBatchClaim], err error) (string, any) {
		j.Log.Error("scoring batch failed", "error", err)
		return truncate(err.Error(), ErrorTailChars), nil
	},
	Work: func(ctx context.Context, j *Job[jobs.ScoreBatchClaim]) (struct{}, error) {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		runs := j.Args.Runs
		reports := make(chan jobs.ScoreBatchReport, len(runs))
		sent := make(chan error, 1)
		go func() { sent <- sendBatchReports(ctx, j, reports, cancel) }()
		items := make([]jobs.ScoringItems, len(runs))
		itemErrs := make([]error, len(runs))
		read := make(chan struct{})
		go func() { // the rest's items, while the first is scored
			defer close(read)
			for i := 1; i < len(runs); i++ {
				items[i], itemErrs[i] = j.w.scoringItems(ctx, runs[i].ItemsKey)
			}
		}()
		if len(runs) > 0 {
			items[0], itemErrs[0] = j.w.scoringItems(ctx, runs[0].ItemsKey)
			scoreGroup(ctx, j, runs[:1], items[:1], itemErrs[:1], reports)
		}
		<-read
		// The rest in groups of one checkpoint and one maximum length (one
		// group in a batch of one model).
		for lo := 1; lo < len(runs) && ctx.Err() == nil; {
			hi := lo + 1
			for hi < len(runs) && items[hi].ArtifactKey == items[lo].ArtifactKey && items[hi].MaxLength == items[lo].MaxLength {
				hi++
			}
			scoreGroup(ctx, j, runs[lo:hi], items[lo:hi], itemErrs[lo:hi], reports)
			lo = hi
		}
		close(reports)
		if err := <-sent; err != nil {
			return struct{}{}, err
		}
		if err := context.Cause(ctx); err != nil {
			return struct{}{}, err
		}
		j.Log.Info("scored batch", "traces", len(runs))
		return struct{}{}, nil
	},
})

// scoreGroup scores runs (their items read, or the error reading them) in
// one engine call and queues each one's report; where that call fails, each
// run is scored alone, so a trace's failure is its own.
func scoreGroup(ctx context.Context, j *Job[jobs.ScoreBatchClaim], runs []jobs.ScoreBatchRun, items []jobs.ScoringItems, itemErrs []error, reports chan<- jobs.ScoreBatchReport) {
	report := func(run jobs.ScoreBatchRun, res jobs.ScoringFinished, err error, took time.Duration) {
		if err != nil {
			j.Log.Warn("scoring a trace of the batch failed", "trace_id", run.TraceID, "error", err)
			reports <- jobs.ScoreBatchReport{TraceID: run.TraceID, RunID: run.RunID, Error: truncate(err.Error(), ErrorTailChars)}
			return
		}
		j.w.cfg.Observer.Scored(len(res.ActionScores)+1, took)
		reports <- jobs.ScoreBatchReport{TraceID: run.TraceID, RunID: run.RunID, ScoringFinished: res}
	}
	var ok []int
	for i := range runs {
		if itemErrs[i] != nil {
			if ctx.Err() != nil {
				return
			}
			report(runs[i], jobs.ScoringFinished{}, itemErrs[i], 0)
			continue
		}
		ok = append(ok, i)
	}
	if len(ok) == 0 {
		return
	}
	group := make([]jobs.ScoringItems, len(ok))
	for g, i := range ok {
		group[g] = items[i]
	}
	start := time.Now()
	res, err := j.w.scoreItems(ctx, j.Log, group)
	if ctx.Err() != nil {
		return
	}
	if err == nil {
		took := time.Since(start) / time.Duration(len(ok))
		for g, i := range ok {
			report(runs[i], res[g], nil, took)
		}
		return
	}
	for _, i := range ok {
		start := time.Now()
		one, err := j.w.scoreItems(ctx, j.Log, items[i:i+1])
		if ctx.Err() != nil {
			return
		}
		var r jobs.ScoringFinished
		if err == nil {
			r = one[0]
		}
		report(runs[i], r, err, time.Since(start))
	}
}

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
