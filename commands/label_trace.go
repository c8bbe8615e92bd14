package commands

import (
	"context"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/traces"
)

// LabelSourceOf is what a step labeler needs for one revision of a trace:
// its steps and the chunks that already carry a label. Needed is false —
// and nothing is sent to a model — when the revision is not current, the
// trace is gone, the agent has not responded, the trace carries its own
// (imported) labels, or every complete chunk has a label already; so a
// duplicate, stale or replayed job never calls a model again.
// It is the claim's answer (label_trace's job table) and reads the trace's
// stream, not the read model, to judge the revision the job names.
func (c *Streams) LabelSourceOf(ctx context.Context, traceID string, revision int) (jobs.LabelSource, error) {
	s, err := c.loadTrace(ctx, traceID)
	if err != nil {
		return jobs.LabelSource{}, err
	}
	out := jobs.LabelSource{TraceID: traceID, Revision: s.Revision, Labeled: []string{}}
	if !s.Exists || s.Revision != revision {
		return out, nil
	}
	steps := s.StepList()
	lab := labels.FromSteps(steps, nil)
	if lab.Present || !labels.AgentResponded(steps) {
		return out, nil
	}
	current := s.CurrentLabels()
	out.Labeled = slices.AppendSeq(out.Labeled, maps.Keys(current))
	slices.Sort(out.Labeled)
	if len(labels.ToLabel(lab.Chunks, current)) == 0 {
		return out, nil
	}
	out.Steps, out.Needed = steps, true
	return out, nil
}

// recordLabelingFailure appends trace.labeling_failed for the current
// revision: the chunks the labeler could not label, and why. A report for
// a revision that is no longer current is a no-op (the new revision has a
// job of its own).
func (c *Streams) recordLabelingFailure(ctx context.Context, workerID, traceID string, revision int, in jobs.LabelFailure, errMsg string) (Result, error) {
	msg := strings.TrimSpace(errMsg)
	if msg == "" {
		return Result{}, domain.Invalid("error is required: say why labeling failed")
	}
	if in.Failed < 1 {
		return Result{}, domain.Invalid("failed must be at least 1, got %d", in.Failed)
	}
	if utf8.RuneCountInString(msg) > jobs.MaxLabelError {
		r := []rune(msg)
		msg = string(r[len(r)-jobs.MaxLabelError:])
	}
	return retryOnConflict(func() (Result, error) {
		s, err := c.loadTrace(ctx, traceID)
		if err != nil {
			return Result{}, err
		}
		if !s.Exists || s.Revision != revision {
			return Result{}, nil
		}
		return c.appendToTrace(ctx, WorkerActor(workerID), s, events.TraceLabelingFailed, events.TraceLabelingFailedV1{TraceID: traceID,
			Revision: revision, Model: in.Model, Failed: in.Failed, Error: msg})
	})
}

var _ = onKind(jobs.KindLabel, (*Streams).labelJob)

// labelJob is KindLabel: the claim answers a revision's steps and the chunks
// already labeled; labels are reported in batches as they arrive (each a
// trace.steps_labeled event, checked by traces.DecideStepLabels against
// the revision it describes); a failure records the chunks it could not
// label; finish ends a run that labeled everything it was asked.
func (c *Streams) labelJob() jobActions {
	type call[B any] = jobCall[jobs.LabelJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return c.LabelSourceOf(ctx, r.ID, r.Job.Revision)
		}),
		jobs.Report: onJob(func(ctx context.Context, r call[jobs.LabelReport]) (any, error) {
			return jobAck(RecordStepLabelsHandler{c}.Handle(ctx, RecordStepLabels{Actor: WorkerActor(r.Worker), Labels: traces.StepLabelsInput{
				TraceID: r.ID, Revision: r.Job.Revision, Model: r.Body.Model, PromptVersion: r.Body.PromptVersion,
				Labels: r.Body.Labels, InputTokens: r.Body.Usage.InputTokens, OutputTokens: r.Body.Usage.OutputTokens}}))
		}),
		jobs.Finish: onJob(func(context.Context, call[struct{}]) (any, error) { return jobs.Ack{OK: true}, nil }),
		jobs.Fail: onJob(func(ctx context.Context, r call[jobs.LabelFailure]) (any, error) {
			return jobAck(c.recordLabelingFailure(ctx, r.Worker, r.ID, r.Job.Revision, r.Body, r.Error))
		}),
	}
}
