package rest

import (
	"net/http"

	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/handlers/edge"
)

// Workers is what the workers reported about themselves with their
// training polls (workerapi.Fleet): the API may not see a worker's disk,
// so the bases a worker can load are the worker's to say.
type Workers interface {
	Present() []rewardmodels.WorkerBases
}

// WithWorkers sets where GET /base-models learns which bases the workers
// can load, and modelRoots, where a tenant's local base_model may lie
// (commands.WithModelRoots: the same rule POST /reward-models applies, so
// nothing is offered that would be refused); without it the list is the
// hub default, unreachable.
func (a *API) WithWorkers(w Workers, modelRoots []string) *API {
	a.workers, a.modelRoots = w, modelRoots
	return a
}

// noWorkersHint is GET /base-models' hint while no worker has reported.
const noWorkersHint = "No worker has reported in the last minute, so which base models can be loaded is unknown: " +
	"start `critic worker` (CRITIC_API_URL, CRITIC_WORKER_TOKEN); `critic run` has one in process."

// listBaseModels is GET /base-models: the base models the workers can
// load now, the default first where it is reachable, with a hint naming
// HF_ENDPOINT, HF_TOKEN and the local choices when it is not. It answers
// from the workers' latest reports and never waits on the hub.
func (a *API) listBaseModels(w http.ResponseWriter, _ *http.Request) error {
	var ws []rewardmodels.WorkerBases
	if a.workers != nil {
		ws = a.workers.Present()
	}
	edge.WriteJSON(w, http.StatusOK, rewardmodels.ListBases(ws, a.modelRoots, noWorkersHint))
	return nil
}
