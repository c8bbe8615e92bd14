package rest

import (
	"net/http"

	"github.com/criticml/critic/handlers/edge"
)

type renameSourceRequest struct {
	SourceID *string `json:"source_id"`
	Name     *string `json:"name"`
}

// renameSource is PUT /trace-sources: the caller's display name for a source
// id, applied to existing and future traces.
func (a *API) renameSource(w http.ResponseWriter, r *http.Request) error {
	var req renameSourceRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	if err := a.d.Backend().RenameTraceSource(r.Context(), edge.CallerFrom(r.Context()), req.SourceID, req.Name); err != nil {
		return err
	}
	edge.WriteJSON(w, http.StatusOK, map[string]string{"source_id": *req.SourceID, "name": *req.Name})
	return nil
}
