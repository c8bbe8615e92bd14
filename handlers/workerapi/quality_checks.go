package workerapi

import (
	"net/http"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/traces"
)

// The quality-check routes: a grader fetches a revision's open steps that
// have no check yet and reports the grading model's answers (each batch a
// trace.steps_quality_checked event, checked by traces.DecideQualityChecks
// against the revision it describes).

func (a *API) qualityCheckSource(r *http.Request) (any, error) {
	var req jobs.QualityCheckSourceRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	src, err := a.cmds.QualityCheckSourceOf(r.Context(), r.PathValue("trace_id"), req.Revision)
	a.claimed("quality_check", err)
	return src, err
}

func (a *API) recordQualityChecks(r *http.Request) (any, error) {
	var req jobs.QualityCheckReport
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	_, err := a.cmds.RecordQualityChecks(r.Context(), commands.WorkerActor(req.WorkerID), traces.QualityChecksInput{
		TraceID: r.PathValue("trace_id"), Revision: req.Revision, Model: req.Model, PromptVersion: req.PromptVersion,
		Checks: req.Checks, InputTokens: req.Usage.InputTokens, OutputTokens: req.Usage.OutputTokens})
	a.reported("quality_check", "succeeded", err)
	return jobs.Ack{OK: err == nil}, err
}
