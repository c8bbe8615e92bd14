package rest

import (
	"net/http"
	"strconv"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/handlers/edge"
)

type criterionLabelRequest struct {
	Name  *string `json:"name"`
	Score *int    `json:"score"`
}

type defineCriterionRequest struct {
	Name        *string                 `json:"name"`
	Description *string                 `json:"description"`
	Kind        *string                 `json:"kind"`
	Labels      []criterionLabelRequest `json:"labels"`
	ScaleMax    *int                    `json:"scale_max"`
	AppliesTo   *string                 `json:"applies_to"`
}

type changeCriterionRequest struct {
	Name        *string                 `json:"name"`
	Description *string                 `json:"description"`
	Labels      []criterionLabelRequest `json:"labels"`
}

// criterionLabels turns a request's labels into the domain's, naming a
// label without a name.
func criterionLabels(in []criterionLabelRequest) ([]criteria.LabelInput, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]criteria.LabelInput, len(in))
	for i, l := range in {
		if l.Name == nil {
			return nil, &domain.ValidationError{Code: "invalid_criterion", Field: "labels[" + strconv.Itoa(i) + "].name", Message: "every label needs a name"}
		}
		out[i] = criteria.LabelInput{Name: *l.Name, Score: l.Score}
	}
	return out, nil
}

// listCriteria is GET /criteria: the caller's active criteria in creation
// order (?include_archived=true adds the archived ones).
func (a *API) listCriteria(w http.ResponseWriter, r *http.Request) error {
	include := false
	switch v := r.URL.Query().Get("include_archived"); v {
	case "", "false":
	case "true":
		include = true
	default:
		return domain.InvalidField("include_archived", "include_archived must be true or false, not "+v)
	}
	cs, err := a.d.Queries.ListCriteria(r.Context(), edge.CallerFrom(r.Context()).UserID, include)
	return reply(w, http.StatusOK, map[string]any{"criteria": cs}, err)
}

// defineCriterion is POST /criteria.
func (a *API) defineCriterion(w http.ResponseWriter, r *http.Request) error {
	var req defineCriterionRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	labels, err := criterionLabels(req.Labels)
	if err != nil {
		return err
	}
	c, err := a.d.Backend().DefineCriterion(r.Context(), edge.CallerFrom(r.Context()), criteria.DefineInput{Name: req.Name, Description: req.Description,
		Kind: req.Kind, Labels: labels, ScaleMax: req.ScaleMax, AppliesTo: req.AppliesTo})
	return reply(w, http.StatusCreated, c, err)
}

// changeCriterion is PATCH /criteria/{criterion_id}.
func (a *API) changeCriterion(w http.ResponseWriter, r *http.Request) error {
	var req changeCriterionRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	labels, err := criterionLabels(req.Labels)
	if err != nil {
		return err
	}
	id := r.PathValue("criterion_id")
	c, err := a.d.Backend().ChangeCriterion(r.Context(), edge.CallerFrom(r.Context()), criteria.ChangeInput{CriterionID: id, Name: req.Name,
		Description: req.Description, Labels: labels, LabelsSet: req.Labels != nil})
	return reply(w, http.StatusOK, c, err)
}

// archiveCriterion is DELETE /criteria/{criterion_id}: archived, not
// erased — its values stay.
func (a *API) archiveCriterion(w http.ResponseWriter, r *http.Request) error {
	return noContent(w, a.d.Backend().ArchiveCriterion(r.Context(), edge.CallerFrom(r.Context()), r.PathValue("criterion_id")))
}

// getGuidelines is GET /guidelines.
func (a *API) getGuidelines(w http.ResponseWriter, r *http.Request) error {
	g, err := a.d.Queries.GetGuidelines(r.Context(), edge.CallerFrom(r.Context()).UserID)
	return reply(w, http.StatusOK, g, err)
}

type setGuidelinesRequest struct {
	Markdown *string `json:"markdown"`
}

// setGuidelines is PUT /guidelines.
func (a *API) setGuidelines(w http.ResponseWriter, r *http.Request) error {
	var req setGuidelinesRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	g, err := a.d.Backend().SetGuidelines(r.Context(), edge.CallerFrom(r.Context()), req.Markdown)
	return reply(w, http.StatusOK, g, err)
}
