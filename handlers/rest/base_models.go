package rest

import (
	"net/http"

	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
)

// WithWorkers sets where GET /base-models learns which bases the workers
// can load, and modelRoots, where a tenant's local base_model may lie
// (commands.WithModelRoots: the same rule POST /reward-models applies, so
// nothing is offered that would be refused); without it the list is the
// hub default, unreachable.
func (a *API) WithWorkers(w usecase.Workers, modelRoots []string) *API {
	a.workers, a.modelRoots = w, modelRoots
	return a
}

// listBaseModels is GET /base-models (usecase.BaseModels).
func (a *API) listBaseModels(w http.ResponseWriter, _ *http.Request) error {
	edge.WriteJSON(w, http.StatusOK, usecase.BaseModels(a.workers, a.modelRoots))
	return nil
}
