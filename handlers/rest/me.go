package rest

import (
	"net/http"

	"github.com/criticml/critic/handlers/edge"
)

// meResponse is GET /me: who the key belongs to and whether it may write.
type meResponse struct {
	UserID   string   `json:"user_id"`
	Name     string   `json:"name"`
	ReadOnly bool     `json:"read_only"`
	Member   meMember `json:"member"`
}

// meMember is the key's member, whose role says what the web app offers.
type meMember struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
}

// me is GET /me. It exists so a client (the web app) can check a pasted key
// and hide write controls for a read-only key, instead of discovering the
// 403 on the first click.
func (a *API) me(w http.ResponseWriter, r *http.Request) error {
	c := edge.CallerFrom(r.Context())
	edge.WriteJSON(w, http.StatusOK, meResponse{UserID: c.UserID, Name: c.Name, ReadOnly: c.ReadOnly,
		Member: meMember{ID: c.MemberID, Name: c.MemberName, Role: string(c.Role)}})
	return nil
}
