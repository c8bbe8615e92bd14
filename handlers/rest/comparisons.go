package rest

import (
	"net/http"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
)

// comparisonQueue is GET /comparisons/queue?limit=20: comparisons the caller
// has not reviewed (spec 002, reviewed comparisons).
func (a *API) comparisonQueue(w http.ResponseWriter, r *http.Request) error {
	limit, err := usecase.QueueLimit(r.URL.Query().Get("limit"), usecase.DefaultQueueLimit, usecase.MaxQueueLimit)
	if err != nil {
		return err
	}
	q, err := a.d.Backend().ComparisonQueue(r.Context(), edge.CallerFrom(r.Context()), limit)
	return reply(w, http.StatusOK, q, err)
}

type comparisonRequest struct {
	ModelID   string  `json:"model_id"`
	FindingID string  `json:"finding_id"`
	Left      string  `json:"left"`
	Choice    string  `json:"choice"`
	Comment   *string `json:"comment"`
}

// reviewComparison is POST /comparisons {model_id, finding_id, left, choice,
// comment?}: 201 with the recorded comparison.
func (a *API) reviewComparison(w http.ResponseWriter, r *http.Request) error {
	var req comparisonRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	c, err := a.d.Backend().ReviewComparison(r.Context(), edge.CallerFrom(r.Context()), commands.ReviewComparisonInput{ModelID: req.ModelID, FindingID: req.FindingID,
		Verdict: comparisons.Verdict{Left: req.Left, Choice: req.Choice, Comment: req.Comment}})
	return reply(w, http.StatusCreated, c, err)
}
