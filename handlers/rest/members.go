package rest

import (
	"net/http"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/projections/readmodel"
)

// listMembers is GET /members: every member of the caller's account, removed
// ones included (their annotations stay attributed to them).
func (a *API) listMembers(w http.ResponseWriter, r *http.Request) error {
	ms, err := a.queries.Members(r.Context(), edge.CallerFrom(r.Context()).UserID)
	if err != nil {
		return err
	}
	if ms == nil {
		ms = []readmodel.Member{}
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"members": ms})
	return nil
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
		return &domain.ValidationError{Code: "invalid_request", Field: "name", Message: "name is required"}
	}
	if req.Role == nil {
		return &domain.ValidationError{Code: "invalid_request", Field: "role", Message: "role is required (admin, reviewer or viewer)"}
	}
	role, err := members.ParseRole("role", *req.Role)
	if err != nil {
		return err
	}
	c := edge.CallerFrom(r.Context())
	res, err := a.cmds.AddMember.Handle(r.Context(), commands.AddMember{AccountID: c.UserID, By: c.MemberID, Name: *req.Name, Role: role})
	if err != nil {
		return err
	}
	if err := a.settle(r.Context(), res.Result); err != nil {
		return err
	}
	m, err := a.queries.Member(r.Context(), edge.CallerFrom(r.Context()).UserID, res.Member.ID)
	if err != nil {
		return err
	}
	edge.WriteJSON(w, http.StatusCreated, addMemberResponse{Member: m, APIKey: res.APIKey, SignInURL: inviteURL(r, res.InviteToken)})
	return nil
}

// origin is the scheme and host the request reached.
func origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host
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
	if req.Role == nil {
		return &domain.ValidationError{Code: "invalid_request", Field: "role", Message: "role is required (admin, reviewer or viewer)"}
	}
	role, err := members.ParseRole("role", *req.Role)
	if err != nil {
		return err
	}
	c, id := edge.CallerFrom(r.Context()), r.PathValue("member_id")
	if _, err := a.queries.Member(r.Context(), edge.CallerFrom(r.Context()).UserID, id); err != nil {
		return err
	}
	res, err := a.cmds.ChangeMemberRole.Handle(r.Context(), commands.ChangeMemberRole{AccountID: c.UserID, By: c.MemberID, MemberID: id, Role: role})
	if err != nil {
		return err
	}
	if err := a.settle(r.Context(), res); err != nil {
		return err
	}
	m, err := a.queries.Member(r.Context(), edge.CallerFrom(r.Context()).UserID, id)
	if err != nil {
		return err
	}
	edge.WriteJSON(w, http.StatusOK, m)
	return nil
}

// removeMember is DELETE /members/{member_id} (admin): the member's keys are
// revoked, their annotations stay attributed to them; removing the last
// admin is 409 last_admin.
func (a *API) removeMember(w http.ResponseWriter, r *http.Request) error {
	c, id := edge.CallerFrom(r.Context()), r.PathValue("member_id")
	if _, err := a.queries.Member(r.Context(), edge.CallerFrom(r.Context()).UserID, id); err != nil {
		return err
	}
	res, err := a.cmds.RemoveMember.Handle(r.Context(), commands.RemoveMember{AccountID: c.UserID, By: c.MemberID, MemberID: id, Reason: r.URL.Query().Get("reason")})
	if err != nil {
		return err
	}
	if err := a.settle(r.Context(), res); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
