package rest

import (
	"net/http"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
)

// agreement is GET /agreement?reward_model_id=: how far the account's
// members agree (issue 36), for the team page.
func (a *API) agreement(w http.ResponseWriter, r *http.Request) error {
	rep, err := a.d.Backend().Agreement(r.Context(), edge.CallerFrom(r.Context()), r.URL.Query().Get("reward_model_id"))
	return reply(w, http.StatusOK, rep, err)
}

// disputed is GET /disputed: the targets the members disagree on, for an
// admin to adjudicate.
func (a *API) disputed(w http.ResponseWriter, r *http.Request) error {
	d, err := a.d.Backend().Disputed(r.Context(), edge.CallerFrom(r.Context()))
	return reply(w, http.StatusOK, d, err)
}

type adjudicateRequest struct {
	judgmentTarget
	Rating *int   `json:"rating"`
	Reason string `json:"reason"`
}

// adjudicate is POST /traces/{trace_id}/adjudications: an admin's final
// judgment of a target, which training counts instead of the members'.
func (a *API) adjudicate(w http.ResponseWriter, r *http.Request) error {
	var req adjudicateRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	in := commands.AdjudicateInput{TraceID: r.PathValue("trace_id"), Rating: req.Rating, Reason: req.Reason}
	in.StepID, in.CriterionID, in.Value = req.target()
	adj, err := a.d.Backend().Adjudicate(r.Context(), edge.CallerFrom(r.Context()), in)
	return reply(w, http.StatusCreated, adj, err)
}

// getReviewOverlap is GET /review-overlap.
func (a *API) getReviewOverlap(w http.ResponseWriter, r *http.Request) error {
	o, err := a.d.Backend().GetReviewOverlap(r.Context(), edge.CallerFrom(r.Context()))
	return reply(w, http.StatusOK, o, err)
}

type setReviewOverlapRequest struct {
	Overlap *int `json:"overlap"`
}

// setReviewOverlap is PUT /review-overlap {"overlap": n}: how many
// members judge each review queue item.
func (a *API) setReviewOverlap(w http.ResponseWriter, r *http.Request) error {
	var req setReviewOverlapRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.Overlap == nil {
		return domain.InvalidField("overlap", "overlap is required: how many members judge each queue item (1–10)")
	}
	o, err := a.d.Backend().SetReviewOverlap(r.Context(), edge.CallerFrom(r.Context()), *req.Overlap)
	return reply(w, http.StatusOK, o, err)
}
