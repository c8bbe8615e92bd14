package rest

import (
	"net/http"

	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
)

// reviewQueue is GET /review-queue?reward_model_id=&limit=: what most needs
// a human, for the web app's Review page (issue 11): with a model, the
// traces and actions it is least sure of; without, unannotated traces first.
// It is the caller's queue; ?member= is another member's, for an admin.
func (a *API) reviewQueue(w http.ResponseWriter, r *http.Request) error {
	limit, err := usecase.QueueLimit(r.URL.Query().Get("limit"), usecase.DefaultReviewLimit, usecase.MaxReviewLimit)
	if err != nil {
		return err
	}
	b, caller := a.d.Backend(), edge.CallerFrom(r.Context())
	member, err := b.OthersMember(r.Context(), caller, r.URL.Query().Get("member"))
	if err != nil {
		return err
	}
	q, err := b.ReviewQueue(r.Context(), caller, member, r.URL.Query().Get("reward_model_id"), limit)
	return reply(w, http.StatusOK, q, err)
}
