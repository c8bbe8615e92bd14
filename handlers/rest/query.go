package rest

import (
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/handlers/edge"
)

// QueryAPI serves POST /query (spec 001 "Querying"): read-only SQL over the
// caller's own snapshot. It is its own type because it depends on the
// snapshot projection's files (Deps.Query, with Auth and MaxBody) rather
// than on commands and the read model.
type QueryAPI struct{ a *API }

// NewQueryAPI returns the /query handler over d.Query (apiserver.Server.Query).
func NewQueryAPI(d edge.Deps) *QueryAPI { return &QueryAPI{New(d)} }

// Register adds POST /query to mux behind authentication and the query
// permission (admins). Read-only keys of an admin may query: nothing a
// query does can write.
func (q *QueryAPI) Register(mux Mux) {
	mux.Handle("POST "+Prefix+"/query", q.a.d.Auth.Middleware(edge.Require(members.Query, handle(q.query))))
}

type queryRequest struct {
	SQL *string `json:"sql"`
}

// query answers `{columns, rows, truncated}` from a snapshot that has
// applied the caller's last write (usecase.Query), or 503
// snapshot_catching_up.
func (q *QueryAPI) query(w http.ResponseWriter, r *http.Request) error {
	var req queryRequest
	if err := q.a.decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.SQL == nil {
		return domain.InvalidField("sql", "sql is required")
	}
	res, err := q.a.d.Query.Run(r.Context(), edge.CallerFrom(r.Context()).UserID, *req.SQL)
	return reply(w, http.StatusOK, res, err)
}
