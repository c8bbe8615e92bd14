package jobs

import "github.com/criticml/critic/domain/rewardmodels"

// Training is pulled, not pushed: a free worker asks the worker service for
// the next queued training attempt (RouteClaimNext), so whichever worker is
// idle takes the oldest waiting model and a busy worker never holds one
// back. Messages on TopicTrain only wake idle workers early; a worker also
// asks every few seconds. A worker that stops hands its attempt back
// (RouteJob's handback) and the model is queued again for the next free
// worker. RouteHello checks the API address and the worker token at start.
const (
	RouteHello     = "POST /hello"
	RouteClaimNext = "POST /jobs/{kind}/claim"
)

// HelloPath is the URL of RouteHello.
func HelloPath() string { return ServicePrefix + "/hello" }

// ClaimNextPath is the URL of RouteClaimNext for a pulled kind (KindTrain).
func ClaimNextPath(kind Kind) string { return ServicePrefix + "/jobs/" + string(kind) + "/claim" }

// Hello is a worker's start-up check.
type Hello struct {
	WorkerID string `json:"worker_id"`
}

// HelloAnswer says the token is right and what leases the API grants.
type HelloAnswer struct {
	OK           bool `json:"ok"`
	LeaseSeconds int  `json:"lease_seconds"`
}

// ClaimNextTraining asks for the oldest claimable training attempt.
// Compute says where the worker runs ("local" for the API's in-process
// worker, "worker" for `critic worker`; shown as the model's compute).
//
// The poll doubles as the worker's presence report: what it computes on
// and which base models it can load now (GET /base-models lists what the
// workers reported, since the API may not see a worker's disk).
type ClaimNextTraining struct {
	WorkerID string `json:"worker_id"`
	Compute  string `json:"compute"`
	// Device is rewardmodels.DeviceCPU or DeviceGPU ("" from an older
	// worker: unknown).
	Device string `json:"device,omitempty"`
	// Bases are the base models this worker can load now, the hub default
	// included with Reachable false when the hub cannot be reached.
	Bases []rewardmodels.BaseChoice `json:"bases,omitempty"`
	// HubError is why the hub could not be reached ("" when it could).
	HubError string `json:"hub_error,omitempty"`
}

// NextTrainingClaim is the answer: Job is null when nothing is waiting.
type NextTrainingClaim struct {
	Job *TrainingClaim `json:"job"`
}
