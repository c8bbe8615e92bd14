package worker

import (
	"context"
	"errors"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/stepscores"
	"github.com/criticml/critic/gpuworker/grade"
	"github.com/criticml/critic/platform/llm"
)

// qualityCheck runs the quality checks of a labeled revision (spec 001
// "Step scores") within its label job: it claims the open steps of the
// revision that have no check yet (none for a stale revision, a trace with
// imported labels, or one checked already — a duplicate or replayed job
// costs no call), asks the grading model about each, and reports the
// answers that validated as one trace.steps_quality_checked event. Without
// a grading model it does nothing: the step scores are the rules alone. A
// failed check leaves the step scored by the rules and is logged; the next
// label job of the trace asks again. Its error is only the job's end
// (RetryLater when ctx ended).
func qualityCheck(ctx context.Context, j *Job[jobs.LabelSource]) error {
	grader := j.w.cfg.Grader
	if grader == nil {
		return nil
	}
	var src jobs.QualityCheckSource
	err := j.Call(ctx, jobs.KindQualityCheck, jobs.Claim, nil, &src)
	switch {
	case ctx.Err() != nil:
		return RetryLater(ctx.Err())
	case errors.Is(err, ErrNotClaimable):
		return nil
	case err != nil:
		j.Log.Warn("quality checks skipped: the source could not be read", "error", err)
		return nil
	case !src.Needed:
		return nil
	}
	open := make(map[string]stepscores.Question, len(src.Open))
	for _, o := range src.Open {
		open[o.ChunkID] = o.Question
	}
	res := grader.Check(ctx, src.Steps, open)
	if ctx.Err() != nil {
		return RetryLater(ctx.Err())
	}
	log := j.Log.With("open", len(src.Open), "checked", len(res.Checks), "check_failed", len(res.Failed), "check_calls", res.Usage.Calls)
	if len(res.Failed) > 0 {
		log.Warn("some quality checks failed; those steps keep the rules' scores", "error", res.Err)
	}
	if len(res.Checks) == 0 {
		return nil
	}
	model := grader.Model()
	checks := make([]stepscores.Check, len(res.Checks))
	for i, c := range res.Checks {
		c.Model = ""
		checks[i] = c
	}
	err = j.Call(ctx, jobs.KindQualityCheck, jobs.Finish, jobs.QualityCheckReport{Model: model, PromptVersion: grade.PromptVersion, Checks: checks,
		Usage: usageOf(model, res.Usage)}, nil)
	switch {
	case ctx.Err() != nil:
		return RetryLater(ctx.Err())
	case err != nil:
		log.Warn("could not record the quality checks", "error", err)
	default:
		log.Info("quality checks recorded")
	}
	return nil
}

// NewGrader is the quality-check grader a worker runs with a grading model.
func NewGrader(c *llm.Client) *grade.Grader { return grade.New(c, labels.DefaultLimits) }
