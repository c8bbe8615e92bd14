package rest

import (
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/sections"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
)

type sectionSummariesRequest struct {
	Ranges *[]sections.Range `json:"ranges"`
}

// sectionSummaries is POST /traces/{trace_id}/section-summaries (spec 001
// "Trace sections"): 1–4 ranges of the caller's trace → their generated
// titles, summaries, objectives and 0–1 scores, or pending / unavailable.
// It needs write access: generating a summary records events and spends the
// operator's provider budget, which a read-only key must not trigger.
func (a *API) sectionSummaries(w http.ResponseWriter, r *http.Request) error {
	var req sectionSummariesRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.Ranges == nil {
		return domain.InvalidField("ranges", "ranges is required: 1 to 4 {first_step_id, last_step_id}")
	}
	out, err := usecase.AssessSections(r.Context(), a.d.Queries, a.d.Assessments, edge.CallerFrom(r.Context()).UserID, r.PathValue("trace_id"), *req.Ranges)
	return reply(w, http.StatusOK, out, err)
}

// completion is POST /traces/{trace_id}/completion: progress estimates
// toward each independent request of the caller's trace. It takes no body
// (an empty one or {}). Write access, as for section summaries.
func (a *API) completion(w http.ResponseWriter, r *http.Request) error {
	body, err := a.readBody(w, r)
	if err != nil {
		return err
	}
	if len(body) > 0 {
		var empty struct{}
		if err := decodeBodyBytes(body, &empty); err != nil {
			return err
		}
	}
	out, err := usecase.EstimateCompletion(r.Context(), a.d.Queries, a.d.Assessments, edge.CallerFrom(r.Context()).UserID, r.PathValue("trace_id"))
	return reply(w, http.StatusOK, out, err)
}
