package rest

import (
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
)

// QueryAPI serves POST /query (spec 001 "Querying"): read-only SQL over the
// caller's own snapshot. It is its own type because it depends on the
// snapshot projection's files rather than on commands and the read model.
type QueryAPI struct {
	q    *usecase.Query
	auth *edge.Authenticator
	body *API // for decodeBody (strict JSON, body limit)
}

// NewQueryAPI returns the /query handler over q (apiserver.Server.Query).
func NewQueryAPI(q *usecase.Query, auth *edge.Authenticator, maxBody int64) *QueryAPI {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	return &QueryAPI{q: q, auth: auth, body: &API{d: edge.Deps{MaxBody: maxBody}}}
}

// Register adds POST /query to mux behind authentication and the query
// permission (admins). Read-only keys of an admin may query: nothing a
// query does can write.
func (q *QueryAPI) Register(mux Mux) {
	mux.Handle("POST "+Prefix+"/query", q.auth.Middleware(edge.Require(members.Query, handle(q.query))))
}

type queryRequest struct {
	SQL *string `json:"sql"`
}

// query answers `{columns, rows, truncated}` from a snapshot that has
// applied the caller's last write (usecase.Query), or 503
// snapshot_catching_up.
func (q *QueryAPI) query(w http.ResponseWriter, r *http.Request) error {
	var req queryRequest
	if err := q.body.decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.SQL == nil {
		return domain.InvalidField("sql", "sql is required")
	}
	res, err := q.q.Run(r.Context(), edge.CallerFrom(r.Context()).UserID, *req.SQL)
	return reply(w, http.StatusOK, res, err)
}
