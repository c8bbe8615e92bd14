package workerapi

import (
	"net/http"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/sections"
)

// The assessment routes: a worker fetches the prompts of a job's items that
// are still current, and reports each item's answer (or failure), which
// the command validates against the trace before it becomes the cached
// assessment.

func (a *API) assessSource(r *http.Request) (any, error) {
	var req jobs.AssessSourceRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	in, err := a.cmds.AssessmentSourceOf(r.Context(), r.PathValue("trace_id"), req.Kind, req.Items)
	a.claimed("assess", err)
	if err != nil {
		return nil, err
	}
	out := jobs.AssessSource{Inputs: make([]jobs.AssessInput, len(in))}
	for i, x := range in {
		out.Inputs[i] = jobs.AssessInput{Item: x.Item, Instructions: x.Instructions, Input: x.Input}
	}
	return out, nil
}

func (a *API) assessRecord(r *http.Request) (any, error) {
	var req jobs.AssessReport
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	ans := commands.AssessmentAnswer{Kind: req.Kind, Item: req.Item, Tasks: req.Tasks, Model: req.Model, Usage: req.Usage, Error: req.Error}
	if s := req.Section; s != nil && req.Item.Range != nil {
		ans.Section = &sections.Summary{FirstStepID: req.Item.Range.FirstStepID, LastStepID: req.Item.Range.LastStepID,
			Title: &s.Title, Summary: &s.Summary, Objective: &s.Objective, Score: s.Score, Reason: &s.Reason}
	}
	_, err := a.cmds.RecordAssessment(r.Context(), req.WorkerID, r.PathValue("trace_id"), ans)
	outcome := "succeeded"
	if req.Error != "" {
		outcome = "failed"
	}
	a.reported("assess", outcome, err)
	return jobs.Ack{OK: err == nil}, err
}
