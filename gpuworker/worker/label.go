package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/gpuworker/label"
	"github.com/criticml/critic/platform/llm"
)

// labelFailure is a labeling run's failure: what it could not label.
type labelFailure struct {
	jobs.LabelFailure
	msg string
}

func (f *labelFailure) Error() string { return f.msg }

// stepLabels runs one critic.jobs.label job: the claim answers what the
// revision still needs (nothing, for a stale, duplicate or replayed job);
// it labels those chunks with the step-label model, reports the labels in
// batches as they arrive (progress shows on GET /traces/{id}), reports the
// chunks it could not label as a labeling failure the owner can retry,
// then runs the revision's quality checks.
var stepLabels = register(Kind[jobs.LabelJob, jobs.LabelSource, struct{}]{
	Consume: labelSlots,
	Kind:    jobs.KindLabel, What: "label job", IDKey: "trace_id", NoFinish: true, RefusedAs: "the label source could not be read",
	Ready: func(w *Worker) error {
		if w.cfg.StepLabel == nil {
			return errors.New("no step-label model on this worker: the trace stays unlabeled (" + w.cfg.StepLabelUnavailable + ")")
		}
		return nil
	},
	Fail: func(j *Job[jobs.LabelSource], err error) (string, any) {
		var f *labelFailure
		if !errors.As(err, &f) {
			f = &labelFailure{LabelFailure: jobs.LabelFailure{Model: j.w.cfg.StepLabel.Model(), Failed: 1}, msg: err.Error()}
		}
		j.Log.Warn("labeling failed", "error", f.msg)
		return f.msg, f.LabelFailure
	},
	Work: func(ctx context.Context, j *Job[jobs.LabelSource]) (struct{}, error) {
		if !j.Args.Needed {
			j.Log.Info("nothing to label for this revision")
			return struct{}{}, qualityCheck(ctx, j)
		}
		have := make(map[string]bool, len(j.Args.Labeled))
		for _, id := range j.Args.Labeled {
			have[id] = true
		}
		model := j.w.cfg.StepLabel.Model()
		report := func(ctx context.Context, batch []labels.Label, u llm.Usage) error {
			return j.Report(ctx, jobs.LabelReport{Model: model, PromptVersion: labels.PromptVersion, Labels: batch,
				Usage: usageOf(model, u)}, nil)
		}
		res, err := j.w.cfg.StepLabel.Label(ctx, j.Args.Steps, have, report)
		j.Log = j.Log.With("targets", res.Targets, "labeled", res.Labeled, "failed", len(res.Failed), "calls", res.Usage.Calls)
		switch {
		case ctx.Err() != nil:
			return struct{}{}, RetryLater(ctx.Err())
		case errors.Is(err, ErrNotClaimable):
			// The trace changed while it was labeled: the new revision has a
			// job of its own; the labels recorded so far keep (chunk ids are
			// stable).
			return struct{}{}, Cancel(slog.LevelInfo, fmt.Errorf("the trace changed while it was labeled; its new revision is queued: %w", err))
		case err != nil:
			return struct{}{}, &labelFailure{LabelFailure: jobs.LabelFailure{Model: model, Failed: max(1, res.Targets-res.Labeled)},
				msg: "recording labels failed: " + err.Error()}
		case len(res.Failed) > 0:
			return struct{}{}, &labelFailure{LabelFailure: jobs.LabelFailure{Model: model, Failed: len(res.Failed)},
				msg: fmt.Sprintf("%d of %d chunks could not be labeled: %v", len(res.Failed), res.Targets, res.Err)}
		}
		j.Log.Info("trace labeled")
		return struct{}{}, qualityCheck(ctx, j)
	},
})

// NewLabeler is the step labeler a worker runs with a step-label model.
func NewLabeler(c *llm.Client) *label.Labeler { return label.New(c, labels.DefaultLimits) }
