package rest

import (
	"net/http"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
)

// InvitationsAcceptPath is the one route served without authentication:
// whoever holds a one-time sign-in link has no key yet.
const InvitationsAcceptPath = "/invitations/accept"

type acceptInvitationRequest struct {
	Token *string `json:"token"`
}

// acceptInvitationResponse is the key a one-time sign-in link issued, shown
// once, with who it signs in.
type acceptInvitationResponse struct {
	APIKey  string         `json:"api_key"`
	Member  meMember       `json:"member"`
	Account invitedAccount `json:"account"`
}

type invitedAccount struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// acceptInvitation is POST /invitations/accept {token} (no auth): 200 with a
// fresh API key for the link's member, once; a used, expired or revoked
// link is 410 invitation_spent.
func (a *API) acceptInvitation(w http.ResponseWriter, r *http.Request) error {
	var req acceptInvitationRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.Token == nil {
		return domain.InvalidField("token", "token is required")
	}
	res, err := a.d.Cmds.AcceptInvitation.Handle(r.Context(), commands.AcceptInvitation{Token: *req.Token})
	if err != nil {
		return err
	}
	if err := a.d.Backend().Settle(r.Context(), res.Result); err != nil {
		return err
	}
	admin, _ := res.Team.Member(res.AccountID)
	edge.WriteJSON(w, http.StatusOK, acceptInvitationResponse{APIKey: res.APIKey,
		Member:  meMember{ID: res.Member.ID, Name: res.Member.Name, Role: string(res.Member.Role)},
		Account: invitedAccount{ID: res.AccountID, Name: admin.Name}})
	return nil
}

// inviteURL is the web app's one-time sign-in link for token, on the scheme
// and host the request reached; the token rides in the fragment, which
// browsers never send to a server.
func inviteURL(r *http.Request, token string) string {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/#invite=" + token
}
