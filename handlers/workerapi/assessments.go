package workerapi

import (
	"context"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/sections"
)

// assessments is KindAssess: the claim answers the prompts of the job's
// items still current; each item's answer (or failure) is a report, which
// the command validates against the trace before it becomes the cached
// assessment.
func (a *API) assessments() actions {
	type c[B any] = call[jobs.AssessJob, B]
	return actions{
		jobs.Claim: on(func(ctx context.Context, r c[struct{}]) (any, error) {
			in, err := a.cmds.AssessmentSourceOf(ctx, r.ID, r.Job.Kind, r.Job.Items)
			if err != nil {
				return nil, err
			}
			out := jobs.AssessSource{Kind: r.Job.Kind, Inputs: make([]jobs.AssessInput, len(in))}
			for i, x := range in {
				out.Inputs[i] = jobs.AssessInput{Item: x.Item, Instructions: x.Instructions, Input: x.Input}
			}
			return out, nil
		}),
		jobs.Report: on(func(ctx context.Context, r c[jobs.AssessReport]) (any, error) {
			b := r.Body
			ans := commands.AssessmentAnswer{Kind: r.Job.Kind, Item: b.Item, Tasks: b.Tasks, Model: b.Model, Usage: b.Usage, Error: b.Error}
			if s := b.Section; s != nil && b.Item.Range != nil {
				ans.Section = &sections.Summary{FirstStepID: b.Item.Range.FirstStepID, LastStepID: b.Item.Range.LastStepID,
					Title: &s.Title, Summary: &s.Summary, Objective: &s.Objective, Score: s.Score, Reason: &s.Reason}
			}
			return ack(a.cmds.RecordAssessment(ctx, r.Worker, r.ID, ans))
		}),
		jobs.Finish: on(func(context.Context, c[struct{}]) (any, error) { return jobs.Ack{OK: true}, nil }),
	}
}
