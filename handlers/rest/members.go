package rest

import (
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/projections/readmodel"
)

// listMembers is GET /members: every member of the caller's account, removed
// ones included (their annotations stay attributed to them).
func (a *API) listMembers(w http.ResponseWriter, r *http.Request) error {
	ms, err := a.d.Queries.Members(r.Context(), edge.CallerFrom(r.Context()).UserID)
	if ms == nil {
		ms = []readmodel.Member{}
	}
	return reply(w, http.StatusOK, map[string]any{"members": ms}, err)
}

type addMemberRequest struct {
	Name *string `json:"name"`
	Role *string `json:"role"`
}

// addMemberResponse carries the new member's key once (for scripts and the
// CLI), and a one-time sign-in link to hand over: it issues them a fresh
// key of their own when opened, once, so a link found later in a chat log
// is dead.
type addMemberResponse struct {
	Member    readmodel.Member `json:"member"`
	APIKey    string           `json:"api_key"`
	SignInURL string           `json:"sign_in_url"`
}

// addMember is POST /members {name, role} (admin): 201 with the member, their
// first API key and a sign-in link to hand over.
func (a *API) addMember(w http.ResponseWriter, r *http.Request) error {
	var req addMemberRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return domain.InvalidField("name", "name is required")
	}
	role, err := usecase.MemberRole(req.Role)
	if err != nil {
		return err
	}
	m, res, err := a.d.Backend().AddMember(r.Context(), edge.CallerFrom(r.Context()), *req.Name, role)
	return reply(w, http.StatusCreated, addMemberResponse{Member: m, APIKey: res.APIKey, SignInURL: inviteURL(r, res.InviteToken)}, err)
}

type changeMemberRequest struct {
	Role *string `json:"role"`
}

// changeMember is PATCH /members/{member_id} {role} (admin); demoting the
// last admin is 409 last_admin.
func (a *API) changeMember(w http.ResponseWriter, r *http.Request) error {
	var req changeMemberRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	role, err := usecase.MemberRole(req.Role)
	if err != nil {
		return err
	}
	m, err := a.d.Backend().ChangeMemberRole(r.Context(), edge.CallerFrom(r.Context()), r.PathValue("member_id"), role)
	return reply(w, http.StatusOK, m, err)
}

// removeMember is DELETE /members/{member_id} (admin): the member's keys are
// revoked, their annotations stay attributed to them; removing the last
// admin is 409 last_admin.
func (a *API) removeMember(w http.ResponseWriter, r *http.Request) error {
	err := a.d.Backend().RemoveMember(r.Context(), edge.CallerFrom(r.Context()), r.PathValue("member_id"), r.URL.Query().Get("reason"))
	return noContent(w, err)
}
