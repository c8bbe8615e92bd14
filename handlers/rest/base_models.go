package rest

import (
	"net/http"

	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
)

// listBaseModels is GET /base-models (usecase.BaseModels).
func (a *API) listBaseModels(w http.ResponseWriter, _ *http.Request) error {
	edge.WriteJSON(w, http.StatusOK, usecase.BaseModels(a.d.Workers, a.d.ModelRoots))
	return nil
}
