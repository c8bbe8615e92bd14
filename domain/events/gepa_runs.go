package events

import "encoding/json"

// GEPA runs (stream gepa_run/<id>, spec 004): a skill optimized against one
// reward model. Status: requested → queued, started → running, succeeded,
// failed; candidate_evaluated and heartbeat report progress while it runs.
const (
	GepaRunRequested          = "gepa_run.requested.v1"
	GepaRunStarted            = "gepa_run.started.v1"
	GepaRunHeartbeat          = "gepa_run.heartbeat.v1"
	GepaRunCandidateEvaluated = "gepa_run.candidate_evaluated.v1"
	GepaRunSucceeded          = "gepa_run.succeeded.v1"
	GepaRunFailed             = "gepa_run.failed.v1"
	// GepaRunRequeued hands a running run back to the queue: its worker
	// stopped (SIGTERM) or its lease expired with tries left. The next free
	// worker runs it from the start.
	GepaRunRequeued = "gepa_run.requeued.v1"
)

// GepaRunRequeuedV1 puts a running run back in the queue. Detail says what
// happened, for the failure message should the last try be lost too;
// LostRuns counts the runs that ended with an expired lease, this one
// included (0 for a hand-back that follows none).
type GepaRunRequeuedV1 struct {
	RunID    string `json:"run_id"`
	WorkerID string `json:"worker_id"`
	Reason   string `json:"reason"` // handed_back | lease_expired
	Detail   string `json:"detail"`
	LostRuns int    `json:"lost_runs"`
}

// GepaRunStream names a run's stream.
func GepaRunStream(id string) string { return "gepa_run/" + id }

// GepaRunRequestedV1 is POST /gepa-runs. The examples were built from the
// model's selected traces at request time and stored under ExamplesKey
// (gepa_examples.jsonl), so the worker reads exactly what was requested.
type GepaRunRequestedV1 struct {
	RunID       string  `json:"run_id"`
	ModelID     string  `json:"model_id"`
	TaskModel   string  `json:"task_model"`
	TaskAPIBase *string `json:"task_api_base"`
	// TaskAPIKeySealed is the key the requester sent for TaskAPIBase,
	// sealed (commands/sealed.go): never in the clear, never projected.
	TaskAPIKeySealed string `json:"task_api_key_sealed,omitempty"`
	ReflectionModel  string `json:"reflection_model"`
	MaxMetricCalls   int    `json:"max_metric_calls"`
	ExamplesKey      string `json:"examples_key"`
	Examples         int    `json:"examples"`
	ArtifactKey      string `json:"artifact_key"`
	InputVersion     int    `json:"input_version"`
}

// GepaRunStartedV1 is a worker's claim; only a queued run can be claimed.
type GepaRunStartedV1 struct {
	RunID        string `json:"run_id"`
	WorkerID     string `json:"worker_id"`
	LeaseSeconds int    `json:"lease_seconds"`
}

// GepaProgress is where a running search stands.
type GepaProgress struct {
	Iteration      int      `json:"iteration"`
	MetricCalls    int      `json:"metric_calls"`
	MaxMetricCalls int      `json:"max_metric_calls"`
	BestScore      *float64 `json:"best_score"`
}

// GepaRunHeartbeatV1 renews the lease and reports progress.
type GepaRunHeartbeatV1 struct {
	RunID    string       `json:"run_id"`
	WorkerID string       `json:"worker_id"`
	Progress GepaProgress `json:"progress"`
}

// GepaRunCandidateEvaluatedV1 is one proposal evaluated on a minibatch
// (and, when accepted, on every example): a model's answer recorded as a
// fact (DESIGN §9).
type GepaRunCandidateEvaluatedV1 struct {
	RunID                string       `json:"run_id"`
	Iteration            int          `json:"iteration"`
	Parent               int          `json:"parent"`
	Index                int          `json:"index"`
	Skill                string       `json:"skill"`
	Accepted             bool         `json:"accepted"`
	MinibatchScore       float64      `json:"minibatch_score"`
	ParentMinibatchScore float64      `json:"parent_minibatch_score"`
	Score                *float64     `json:"score"`
	Progress             GepaProgress `json:"progress"`
}

// GepaRunSucceededV1 carries result.json (spec 001 job contract).
type GepaRunSucceededV1 struct {
	RunID  string          `json:"run_id"`
	Result json.RawMessage `json:"result"`
}

// GepaRunFailedV1 ends a run; Error is the end of the worker log.
type GepaRunFailedV1 struct {
	RunID string `json:"run_id"`
	Error string `json:"error"`
}
