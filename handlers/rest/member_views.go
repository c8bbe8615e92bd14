package rest

import (
	"net/http"

	"github.com/criticml/critic/handlers/edge"
)

// memberParam reads ?member= (issue 36's filter by member on the trace
// list, the review queue and the exports): usecase.MemberFilter, which the
// Connect methods' member fields share.
func (a *API) memberParam(r *http.Request) (string, error) {
	return a.d.Backend().MemberFilter(r.Context(), edge.CallerFrom(r.Context()).UserID, r.URL.Query().Get("member"))
}

// membersProgress is GET /members/progress: who did what under the current
// overlap (issue 36). An admin sees every member; anyone else their own
// row alone (the queue totals are the account's either way).
func (a *API) membersProgress(w http.ResponseWriter, r *http.Request) error {
	p, err := a.d.Backend().MembersProgress(r.Context(), edge.CallerFrom(r.Context()))
	return reply(w, http.StatusOK, p, err)
}
