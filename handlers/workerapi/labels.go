package workerapi

import (
	"context"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/traces"
)

// labels is KindLabel: the claim answers a revision's steps and the chunks
// already labeled; labels are reported in batches as they arrive (each a
// trace.steps_labeled event, checked by traces.DecideStepLabels against
// the revision it describes); a failure records the chunks it could not
// label; finish ends a run that labeled everything it was asked.
func (a *API) labels() actions {
	type c[B any] = call[jobs.LabelJob, B]
	return actions{
		jobs.Claim: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return a.cmds.LabelSourceOf(ctx, r.ID, r.Job.Revision)
		}),
		jobs.Report: on(func(ctx context.Context, r c[jobs.LabelReport]) (any, error) {
			return ack(a.cmds.RecordStepLabels(ctx, commands.WorkerActor(r.Worker), traces.StepLabelsInput{
				TraceID: r.ID, Revision: r.Job.Revision, Model: r.Body.Model, PromptVersion: r.Body.PromptVersion,
				Labels: r.Body.Labels, InputTokens: r.Body.Usage.InputTokens, OutputTokens: r.Body.Usage.OutputTokens}))
		}),
		jobs.Finish: on(func(context.Context, c[struct{}]) (any, error) { return jobs.Ack{OK: true}, nil }),
		jobs.Fail: on(func(ctx context.Context, r c[jobs.LabelFailure]) (any, error) {
			return ack(a.cmds.RecordLabelingFailure(ctx, r.Worker, r.ID, r.Job.Revision, r.Body, r.Error))
		}),
	}
}

// qualityChecks is KindQualityCheck, run within a label job after its
// labels (its job is the label job's message): the claim answers the open
// steps without a check, the result is the grading model's answers (a
// trace.steps_quality_checked event, checked by traces.DecideQualityChecks).
func (a *API) qualityChecks() actions {
	type c[B any] = call[jobs.LabelJob, B]
	return actions{
		jobs.Claim: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			return a.cmds.QualityCheckSourceOf(ctx, r.ID, r.Job.Revision)
		}),
		jobs.Finish: on(func(ctx context.Context, r c[jobs.QualityCheckReport]) (any, error) {
			return ack(a.cmds.RecordQualityChecks(ctx, commands.WorkerActor(r.Worker), traces.QualityChecksInput{
				TraceID: r.ID, Revision: r.Job.Revision, Model: r.Body.Model, PromptVersion: r.Body.PromptVersion,
				Checks: r.Body.Checks, InputTokens: r.Body.Usage.InputTokens, OutputTokens: r.Body.Usage.OutputTokens}))
		}),
	}
}
