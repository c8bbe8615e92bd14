package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/sections"
)

// assessmentSource returns the model inputs of the items still current:
// an item whose key no longer matches the trace (it changed, or was
// deleted) is left out, so a stale job calls no model.
func (c *Streams) assessmentSource(ctx context.Context, traceID, kind string, items []events.AssessmentItem) ([]jobs.AssessInput, error) {
	s, err := c.loadTrace(ctx, traceID)
	if err != nil {
		return nil, err
	}
	out := []jobs.AssessInput{}
	if !s.Exists {
		return out, nil
	}
	steps, ids := s.StepList(), s.StepIDs()
	for _, it := range items {
		switch kind {
		case events.AssessmentSections:
			j, ok := sectionJob(steps, ids, it)
			if ok {
				out = append(out, jobs.AssessInput{Item: it, Instructions: sections.SectionInstructions, Input: j.Prompt(steps, ids)})
			}
		case events.AssessmentCompletion:
			j := sections.NewCompletionJob(steps, ids, it.Tasks)
			if j.Key == it.Key {
				out = append(out, jobs.AssessInput{Item: it, Instructions: sections.CompletionInstructions, Input: j.Prompt(steps, ids)})
			}
		default:
			return nil, domain.Invalid("unknown assessment kind %q", kind)
		}
	}
	return out, nil
}

// sectionJob recomputes a section item's job; ok is false when its range
// or its key is no longer the trace's.
func sectionJob(steps []domain.Step, ids []string, it events.AssessmentItem) (sections.SectionJob, bool) {
	if it.Range == nil {
		return sections.SectionJob{}, false
	}
	rs, err := sections.ResolveRanges(ids, []sections.Range{*it.Range})
	if err != nil {
		return sections.SectionJob{}, false
	}
	j := sections.NewSectionJob(steps, ids, rs[0])
	return j, j.Key == it.Key
}

// AssessmentAnswer is a worker's report for one item: the generated section
// or completion tasks, or the reason generation failed.
type AssessmentAnswer struct {
	Kind    string
	Item    events.AssessmentItem
	Section *sections.Summary
	Tasks   []sections.CompletionTask
	Model   string
	Usage   events.LLMUsage
	Error   string
}

// recordAssessment appends a worker's answer for one item when the item is
// still current: a section bound to exactly its range with a 0–1 score (or
// null) and a reason; a completion estimate for exactly the requested
// tasks, with ordered checkpoints inside them and 0–1 values, no progress
// earned at a user message. An answer that fails these checks is recorded
// as a failure naming the check (trace.assessment_failed), never cached as
// an answer. A stale item is a no-op.
func (c *Streams) recordAssessment(ctx context.Context, workerID, traceID string, a AssessmentAnswer) (Result, error) {
	return retryOnConflict(func() (Result, error) {
		s, err := c.loadTrace(ctx, traceID)
		if err != nil {
			return Result{}, err
		}
		if !s.Exists {
			return Result{}, nil
		}
		steps, ids := s.StepList(), s.StepIDs()
		version := sections.SectionAssessmentVersion
		var problem error
		switch a.Kind {
		case events.AssessmentSections:
			j, ok := sectionJob(steps, ids, a.Item)
			if !ok {
				return Result{}, nil
			}
			if a.Error == "" {
				if a.Section == nil {
					problem = fmt.Errorf("sections: no section in the answer")
				} else {
					problem = sections.ValidateSummaries([]sections.Resolved{j.Range}, []sections.Summary{*a.Section})
				}
			}
		case events.AssessmentCompletion:
			version = sections.CompletionVersion
			if sections.NewCompletionJob(steps, ids, a.Item.Tasks).Key != a.Item.Key {
				return Result{}, nil
			}
			if a.Error == "" {
				problem = sections.MatchesTasks(a.Item.Tasks, a.Tasks)
				if problem == nil {
					problem = sections.ValidateCompletion(steps, ids, a.Tasks)
				}
			}
		default:
			return Result{}, domain.Invalid("unknown assessment kind %q", a.Kind)
		}
		msg := strings.TrimSpace(a.Error)
		if problem != nil {
			msg = a.Model + ": the answer failed validation: " + problem.Error()
		}
		if msg != "" {
			return c.appendToTrace(ctx, WorkerActor(workerID), s, events.TraceAssessmentFailed, events.TraceAssessmentFailedV1{TraceID: traceID,
				Kind: a.Kind, Version: version, Key: a.Item.Key, Model: a.Model, Error: truncateRunes(msg, 2000)})
		}
		return c.appendToTrace(ctx, WorkerActor(workerID), s, events.TraceAssessmentRecorded, events.TraceAssessmentRecordedV1{TraceID: traceID,
			Kind: a.Kind, Version: version, Key: a.Item.Key, EvidenceHash: a.Item.EvidenceHash, Section: a.Section, Tasks: a.Tasks,
			Model: a.Model, PromptVersion: sections.PromptVersion, Usage: a.Usage})
	})
}

// truncateRunes keeps the first n runes of s.
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

var _ = onKind(jobs.KindAssess, (*Streams).assessJob)

// assessJob is KindAssess: the claim answers the prompts of the job's
// items still current; each item's answer (or failure) is a report, which
// the command validates against the trace before it becomes the cached
// assessment.
func (c *Streams) assessJob() jobActions {
	type call[B any] = jobCall[jobs.AssessJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			in, err := c.assessmentSource(ctx, r.ID, r.Job.Kind, r.Job.Items)
			if err != nil {
				return nil, err
			}
			return jobs.AssessSource{Kind: r.Job.Kind, Inputs: in}, nil
		}),
		jobs.Report: onJob(func(ctx context.Context, r call[jobs.AssessReport]) (any, error) {
			b := r.Body
			ans := AssessmentAnswer{Kind: r.Job.Kind, Item: b.Item, Tasks: b.Tasks, Model: b.Model, Usage: b.Usage, Error: b.Error}
			if s := b.Section; s != nil && b.Item.Range != nil {
				ans.Section = &sections.Summary{FirstStepID: b.Item.Range.FirstStepID, LastStepID: b.Item.Range.LastStepID,
					Title: &s.Title, Summary: &s.Summary, Objective: &s.Objective, Score: s.Score, Reason: &s.Reason}
			}
			return jobAck(c.recordAssessment(ctx, r.Worker, r.ID, ans))
		}),
		jobs.Finish: onJob(func(context.Context, call[struct{}]) (any, error) { return jobs.Ack{OK: true}, nil }),
	}
}
