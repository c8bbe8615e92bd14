package rest

import (
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/handlers/edge"
)

// RegisterQuery adds POST /query (spec 001 "Querying": read-only SQL over
// the caller's own snapshot) to mux behind authentication and the query
// permission (admins). Read-only keys of an admin may query: nothing a
// query does can write. It is apart from Register because it depends on
// the snapshot projection's files (Deps.Query, apiserver.Server.Query, with
// Auth and MaxBody) rather than on commands and the read model.
func (a *API) RegisterQuery(mux Mux) {
	mux.Handle("POST "+Prefix+"/query", a.d.Auth.Middleware(edge.Require(members.Query, handle(a.query))))
}

type queryRequest struct {
	SQL *string `json:"sql"`
}

// query answers `{columns, rows, truncated}` from a snapshot that has
// applied the caller's last write (usecase.Query), or 503
// snapshot_catching_up.
func (a *API) query(w http.ResponseWriter, r *http.Request) error {
	var req queryRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.SQL == nil {
		return domain.InvalidField("sql", "sql is required")
	}
	res, err := a.d.Query.Run(r.Context(), edge.CallerFrom(r.Context()).UserID, *req.SQL)
	return reply(w, http.StatusOK, res, err)
}
