package rest

import (
	"errors"
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/platform/duck"
)

// QueryAPI serves POST /query (spec 001 "Querying"): read-only SQL over the
// caller's own snapshot. It is its own type because it depends on the
// snapshot projection's files rather than on commands and the read model.
type QueryAPI struct {
	snaps *duck.Snapshots
	auth  *edge.Authenticator
	body  *API // for decodeBody (strict JSON, body limit)
}

// NewQueryAPI returns the /query handler over snaps.
func NewQueryAPI(snaps *duck.Snapshots, auth *edge.Authenticator, maxBody int64) *QueryAPI {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	return &QueryAPI{snaps: snaps, auth: auth, body: &API{maxBody: maxBody}}
}

// Register adds POST /query to mux behind authentication. Read-only keys may
// query: nothing a query does can write.
func (q *QueryAPI) Register(mux Mux) {
	mux.Handle("POST "+Prefix+"/query", q.auth.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := q.query(w, r); err != nil {
			edge.WriteError(w, err)
		}
	})))
}

type queryRequest struct {
	SQL *string `json:"sql"`
}

// query answers `{columns, rows, truncated}`. The snapshot is eventually
// consistent: a write shows up once the snapshot projection applied it
// (usually within milliseconds), not necessarily in the next query.
func (q *QueryAPI) query(w http.ResponseWriter, r *http.Request) error {
	var req queryRequest
	if err := q.body.decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.SQL == nil {
		return &domain.ValidationError{Code: "invalid_request", Field: "sql", Message: "sql is required"}
	}
	if q.snaps == nil {
		return errors.New("rest: query snapshots are not configured")
	}
	res, err := q.snaps.Query(r.Context(), edge.CallerFrom(r.Context()).UserID, *req.SQL)
	if err != nil {
		return err
	}
	edge.WriteJSON(w, http.StatusOK, res)
	return nil
}
