package rest

import (
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
)

type contributionRequest struct {
	Contribute *bool `json:"contribute"`
}

// setContribution is PUT /traces/{trace_id}/contribution {contribute}: the
// trace's consent to train the shared evaluator (spec 002). 200 with the
// consent and its notice; 404 for a trace that is not the caller's.
func (a *API) setContribution(w http.ResponseWriter, r *http.Request) error {
	var req contributionRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.Contribute == nil {
		return domain.InvalidField("contribute", "contribute is required (true or false)")
	}
	out, err := a.d.Backend().SetContribution(r.Context(), edge.CallerFrom(r.Context()), r.PathValue("trace_id"), *req.Contribute)
	return reply(w, http.StatusOK, out, err)
}
