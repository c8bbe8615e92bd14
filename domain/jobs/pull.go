package jobs

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
type ClaimNextTraining struct {
	WorkerID string `json:"worker_id"`
	Compute  string `json:"compute"`
}

// NextTrainingClaim is the answer: Job is null when nothing is waiting.
type NextTrainingClaim struct {
	Job *TrainingClaim `json:"job"`
}
