package workerapi

import (
	"net/http"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/traces"
)

// The step-label routes: a labeler fetches a revision's steps and the chunks
// already labeled, reports labels in batches as it goes (each batch a
// trace.steps_labeled event, checked by traces.DecideStepLabels against the
// revision it describes), and reports the chunks it could not label.

func (a *API) labelSource(r *http.Request) (any, error) {
	var req jobs.LabelSourceRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	src, err := a.cmds.LabelSourceOf(r.Context(), r.PathValue("trace_id"), req.Revision)
	a.claimed("label", err)
	return src, err
}

func (a *API) recordLabels(r *http.Request) (any, error) {
	var req jobs.LabelReport
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	_, err := a.cmds.RecordStepLabels(r.Context(), commands.WorkerActor(req.WorkerID), traces.StepLabelsInput{
		TraceID: r.PathValue("trace_id"), Revision: req.Revision, Model: req.Model, PromptVersion: req.PromptVersion,
		Labels: req.Labels, InputTokens: req.Usage.InputTokens, OutputTokens: req.Usage.OutputTokens})
	a.reported("label", "succeeded", err)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) labelingFailed(r *http.Request) (any, error) {
	var req jobs.LabelFailure
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	_, err := a.cmds.RecordLabelingFailure(r.Context(), req.WorkerID, r.PathValue("trace_id"), req)
	a.reported("label", "failed", err)
	return jobs.Ack{OK: err == nil}, err
}
