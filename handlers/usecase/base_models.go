package usecase

import "github.com/criticml/critic/domain/rewardmodels"

// Workers is what the workers reported about themselves with their
// training polls (workerapi.Fleet): the API may not see a worker's disk,
// so the bases a worker can load are the worker's to say.
type Workers interface {
	Present() []rewardmodels.WorkerBases
}

// noWorkersHint is the base list's hint while no worker has reported.
const noWorkersHint = "No worker has reported in the last minute, so which base models can be loaded is unknown: " +
	"start `critic worker` (CRITIC_API_URL, CRITIC_WORKER_TOKEN); `critic run` has one in process."

// BaseModels is GET /base-models and BaseModelService.ListBaseModels: the
// base models the workers (nil: none known) can load now, the default first
// where it is reachable, with a hint naming HF_ENDPOINT, HF_TOKEN and the
// local choices when it is not. modelRoots is where a tenant's local
// base_model may lie (the rule POST /reward-models applies, so nothing is
// offered that would be refused). It answers from the workers' latest
// reports and never waits on the hub.
func BaseModels(w Workers, modelRoots []string) rewardmodels.BaseList {
	var ws []rewardmodels.WorkerBases
	if w != nil {
		ws = w.Present()
	}
	return rewardmodels.ListBases(ws, modelRoots, noWorkersHint)
}
