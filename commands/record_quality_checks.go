package commands

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/traces"
)

// QualityCheckSourceOf is what a grader needs for one revision of a trace
// (spec 001 "Step scores", quality checks): its steps, its labels, and the
// open steps that have no check yet with the question each is asked. Needed
// is false — and nothing is sent to a model — when the revision is not
// current, the trace is gone or carries its own labels, or every open step
// is checked already; so a duplicate, stale or replayed job never calls a
// model again, and a retry reuses the answers already recorded.
// It is the claim's answer and reads the trace's stream, as LabelSourceOf.
func (c *Streams) QualityCheckSourceOf(ctx context.Context, traceID string, revision int) (jobs.QualityCheckSource, error) {
	s, err := c.loadTrace(ctx, traceID)
	if err != nil {
		return jobs.QualityCheckSource{}, err
	}
	out := jobs.QualityCheckSource{TraceID: traceID, Revision: s.Revision, Labels: []labels.Label{}, Open: []jobs.OpenStep{}}
	if !s.Exists || s.Revision != revision {
		return out, nil
	}
	for id, q := range traces.OpenChecks(s) {
		if _, done := s.QualityChecks[id]; !done {
			out.Open = append(out.Open, jobs.OpenStep{ChunkID: id, Question: q})
		}
	}
	if len(out.Open) == 0 {
		return out, nil
	}
	slices.SortFunc(out.Open, func(a, b jobs.OpenStep) int { return cmp.Compare(a.ChunkID, b.ChunkID) })
	out.Labels = slices.AppendSeq(out.Labels, maps.Values(s.StepLabels))
	slices.SortFunc(out.Labels, func(a, b labels.Label) int { return cmp.Compare(a.ChunkID, b.ChunkID) })
	out.Steps, out.Needed = s.StepList(), true
	return out, nil
}

// RecordQualityChecks appends a grading model's answers for open steps of a
// trace (trace.steps_quality_checked) once they pass
// traces.DecideQualityChecks. The grader runs in the worker tier and
// reports through the API's worker service, never in a request.
type RecordQualityChecks struct {
	Actor  Actor
	Checks traces.QualityChecksInput
}

// RecordQualityChecksHandler runs RecordQualityChecks.
type RecordQualityChecksHandler struct{ *Streams }

func (c RecordQualityChecksHandler) Handle(ctx context.Context, cmd RecordQualityChecks) (Result, error) {
	return c.onTrace(ctx, cmd.Actor, cmd.Checks.TraceID, func(st traces.State) (string, any, error) {
		ev, err := traces.DecideQualityChecks(st, cmd.Checks)
		return events.TraceStepsQualityChecked, ev, err
	})
}

var _ = onKind(jobs.KindQualityCheck, (*Streams).qualityCheckJob)

// qualityCheckJob is KindQualityCheck, run within a label job after its
// labels (its job is the label job's message): the claim answers the open
// steps without a check, the result is the grading model's answers (a
// trace.steps_quality_checked event, checked by traces.DecideQualityChecks).
func (c *Streams) qualityCheckJob() jobActions {
	type call[B any] = jobCall[jobs.LabelJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return c.QualityCheckSourceOf(ctx, r.ID, r.Job.Revision)
		}),
		jobs.Finish: onJob(func(ctx context.Context, r call[jobs.QualityCheckReport]) (any, error) {
			return jobAck(RecordQualityChecksHandler{c}.Handle(ctx, RecordQualityChecks{Actor: WorkerActor(r.Worker), Checks: traces.QualityChecksInput{
				TraceID: r.ID, Revision: r.Job.Revision, Model: r.Body.Model, PromptVersion: r.Body.PromptVersion,
				Checks: r.Body.Checks, InputTokens: r.Body.Usage.InputTokens, OutputTokens: r.Body.Usage.OutputTokens}}))
		}),
	}
}
