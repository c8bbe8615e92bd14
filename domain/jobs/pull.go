package jobs

// Training is pulled, not pushed: a free worker asks the worker service for
// the next queued training attempt (RouteClaimNextTraining), so whichever
// worker is idle takes the oldest waiting model and a busy worker never
// holds one back. Messages on TopicTrain only wake idle workers early; a
// worker also asks every few seconds. A worker that stops hands its attempt
// back (RouteHandBack) and the model is queued again for the next free
// worker. RouteHello checks the API address and the worker token at start.
const (
	RouteHello             = "POST /hello"
	RouteClaimNextTraining = "POST /training/claim"
	RouteHandBack          = "POST /training/{model_id}/handback"
)

// HelloPath and ClaimNextTrainingPath are the URLs of RouteHello and
// RouteClaimNextTraining; RouteHandBack is TrainingPath(id, "handback").
func HelloPath() string { return ServicePrefix + "/hello" }

// ClaimNextTrainingPath: see HelloPath.
func ClaimNextTrainingPath() string { return ServicePrefix + "/training/claim" }

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

// HandBack returns a running attempt to the queue; Reason is one line
// saying why (e.g. the worker is shutting down).
type HandBack struct {
	AttemptRequest
	Reason string `json:"reason"`
}
