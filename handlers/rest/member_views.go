package rest

import (
	"errors"
	"net/http"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/handlers/edge"
)

// memberParam reads ?member= (issue 36's filter by member on the trace
// list, the review queue and the exports): "" when absent, else the id of
// a member of the caller's account (a removed one too: their annotations
// stay theirs). An id the account does not have is 422 unknown_member
// naming member, whether it is another account's or none at all.
func (a *API) memberParam(r *http.Request) (string, error) {
	id := r.URL.Query().Get("member")
	if id == "" {
		return "", nil
	}
	if _, err := a.member(r, id); err != nil {
		var nf *domain.NotFoundError
		if errors.As(err, &nf) {
			return "", &domain.ValidationError{Code: "unknown_member", Field: "member",
				Message: "member " + id + " is not a member of this account (GET /members lists them)"}
		}
		return "", err
	}
	return id, nil
}

// othersMember is memberParam where looking at another member's work (their
// review queue, their progress) is an admin's view: anyone else may name
// only themselves, or gets 403 from the role's check (the role's, not the
// key's: a read-only admin key reads, and this is reading). "" means the
// caller.
func (a *API) othersMember(r *http.Request) (string, error) {
	id, err := a.memberParam(r)
	if err != nil || id == "" {
		return id, err
	}
	c := edge.CallerFrom(r.Context())
	if id != callerMember(c.UserID, c.MemberID) {
		if err := c.Role.Check(members.Manage); err != nil {
			return "", &domain.ForbiddenError{Message: "only an admin may look at another member's work (member " + id + "): " + err.Error()}
		}
	}
	return id, nil
}

// callerMember is the member id a caller's annotations carry: the key's
// member, or the account's own id for its implicit admin.
func callerMember(userID, memberID string) string {
	if memberID == "" {
		return userID
	}
	return memberID
}

// memberProgressJSON is one member's row of GET /members/progress.
type memberProgressJSON struct {
	memberJSON
	Annotations    int        `json:"annotations"`
	Judged         int        `json:"judged"`
	Remaining      *int       `json:"remaining"`
	LastActivityAt *time.Time `json:"last_activity_at"`
}

// membersProgressResponse is GET /members/progress.
type membersProgressResponse struct {
	Overlap  int                  `json:"overlap"`
	Items    int                  `json:"items"`
	Complete int                  `json:"complete"`
	Members  []memberProgressJSON `json:"members"`
}

// membersProgress is GET /members/progress: who did what under the current
// overlap (issue 36). An admin sees every member; anyone else their own
// row alone (the queue totals are the account's either way).
func (a *API) membersProgress(w http.ResponseWriter, r *http.Request) error {
	c := edge.CallerFrom(r.Context())
	overlap, err := a.queries.ReviewOverlap(r.Context(), c.UserID)
	if err != nil {
		return err
	}
	ps, cov, err := a.queries.MembersProgress(r.Context(), c.UserID, overlap)
	if err != nil {
		return err
	}
	all := c.Role.May(members.Manage)
	me := callerMember(c.UserID, c.MemberID)
	out := membersProgressResponse{Overlap: overlap, Items: cov.Items, Complete: cov.Complete, Members: []memberProgressJSON{}}
	for _, p := range ps {
		if !all && p.ID != me {
			continue
		}
		out.Members = append(out.Members, memberProgressJSON{memberJSON: toMemberJSON(p.Member), Annotations: p.Annotations,
			Judged: p.Judged, Remaining: p.Remaining, LastActivityAt: p.LastActivity})
	}
	edge.WriteJSON(w, http.StatusOK, out)
	return nil
}
