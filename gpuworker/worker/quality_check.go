package worker

import (
	"context"
	"errors"
	"log/slog"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/stepscores"
	"github.com/criticml/critic/gpuworker/grade"
	"github.com/criticml/critic/platform/llm"
)

// qualityCheck runs the quality checks of a labeled revision (spec 001
// "Step scores"): it asks the worker service which open steps have no
// check yet (none for a stale revision, a trace with imported labels, or
// one checked already — a duplicate or replayed job costs no call), asks
// the grading model about each, and reports the answers that validated as
// one trace.steps_quality_checked event. Without a grading model it does
// nothing: the step scores are the rules alone. A failed check leaves the
// step scored by the rules and is logged; the next label job of the trace
// asks again. It returns false only when ctx ended.
func (w *Worker) qualityCheck(ctx context.Context, log *slog.Logger, esc string, revision int) bool {
	if w.cfg.Grader == nil {
		return true
	}
	src, err := retry(ctx, w.cfg.ReportRetryFor, log, "fetching the quality-check source", func(ctx context.Context) (jobs.QualityCheckSource, error) {
		var s jobs.QualityCheckSource
		err := w.client.post(ctx, jobs.QualityCheckSourcePath(esc), jobs.QualityCheckSourceRequest{WorkerID: w.client.WorkerID, Revision: revision}, &s)
		return s, err
	})
	switch {
	case ctx.Err() != nil:
		return false
	case errors.Is(err, ErrNotClaimable):
		return true
	case err != nil:
		log.Warn("quality checks skipped: the source could not be read", "error", err)
		return true
	case !src.Needed:
		return true
	}
	open := make(map[string]stepscores.Question, len(src.Open))
	for _, o := range src.Open {
		open[o.ChunkID] = o.Question
	}
	res := w.cfg.Grader.Check(ctx, src.Steps, open)
	if ctx.Err() != nil {
		return false
	}
	log = log.With("open", len(src.Open), "checked", len(res.Checks), "check_failed", len(res.Failed), "check_calls", res.Usage.Calls)
	if len(res.Failed) > 0 {
		log.Warn("some quality checks failed; those steps keep the rules' scores", "error", res.Err)
	}
	if len(res.Checks) == 0 {
		return true
	}
	if err := w.reportChecks(ctx, log, esc, revision, res); err != nil {
		if ctx.Err() != nil {
			return false
		}
		log.Warn("could not record the quality checks", "error", err)
		return true
	}
	log.Info("quality checks recorded")
	return true
}

func (w *Worker) reportChecks(ctx context.Context, log *slog.Logger, esc string, revision int, res grade.Result) error {
	model := w.cfg.Grader.Model()
	checks := make([]stepscores.Check, len(res.Checks))
	for i, c := range res.Checks {
		c.Model = ""
		checks[i] = c
	}
	u := res.Usage
	_, err := retry(ctx, w.cfg.ReportRetryFor, log, "recording quality checks", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.client.post(ctx, jobs.QualityCheckRecordPath(esc), jobs.QualityCheckReport{WorkerID: w.client.WorkerID,
			Revision: revision, Model: model, PromptVersion: grade.PromptVersion, Checks: checks,
			Usage: events.LLMUsage{Model: model, Calls: u.Calls, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CachedTokens}}, nil)
	})
	return err
}

// NewGrader is the quality-check grader a worker runs with a grading model.
func NewGrader(c *llm.Client) *grade.Grader { return grade.New(c, labels.DefaultLimits) }
