package events

import (
	"encoding/json"

	"github.com/criticml/critic/domain/agreement"
)

// Event types of the reward-model aggregate (stream reward_model/<id>). The
// status a user sees is derived from them: requested/dataset_built/retried →
// queued, training_started → running, training_succeeded → succeeded,
// training_failed → failed.
const (
	RewardModelRequested         = "reward_model.requested.v1"
	RewardModelDatasetBuilt      = "reward_model.dataset_built.v1"
	RewardModelTrainingStarted   = "reward_model.training_started.v1"
	RewardModelHeartbeat         = "reward_model.heartbeat.v1"
	RewardModelTrainingSucceeded = "reward_model.training_succeeded.v1"
	RewardModelTrainingFailed    = "reward_model.training_failed.v1"
	RewardModelRetried           = "reward_model.retried.v1"
	// RewardModelTrainingRequeued hands a running attempt back to the
	// queue: its worker stopped (SIGTERM) or its lease expired with tries
	// left. The model is queued again under the same attempt and dataset,
	// so whichever worker is free trains it.
	RewardModelTrainingRequeued = "reward_model.training_requeued.v1"
)

// RewardModelStream names a model's stream.
func RewardModelStream(id string) string { return "reward_model/" + id }

// RewardModelRequestedV1 is POST /reward-models.
type RewardModelRequestedV1 struct {
	ModelID   string   `json:"model_id"`
	Name      string   `json:"name"`
	BaseModel string   `json:"base_model"`
	Compute   string   `json:"compute"`
	Epochs    int      `json:"epochs"`
	MaxPairs  int      `json:"max_pairs"`
	TraceIDs  []string `json:"trace_ids"`
	// TrainingConfig is absent on requests made before it existed: they
	// read as annotation_source feedback, input_version 1.
	TrainingConfig *TrainingConfig `json:"training_config,omitempty"`
	// FeedbackPlan is whether the first attempt extracts feedback (absent:
	// it does not, ratings only).
	FeedbackPlan *FeedbackPlan `json:"feedback_plan,omitempty"`
}

// RewardModelDatasetBuiltV1 records the training dataset of one attempt: the
// pairs (with the annotations and trace revisions behind each) and the texts
// to score, stored in the blob store under DatasetKey.
type RewardModelDatasetBuiltV1 struct {
	ModelID          string `json:"model_id"`
	Attempt          int    `json:"attempt"`
	DatasetKey       string `json:"dataset_key"`
	DatasetSHA256    string `json:"dataset_sha256"`
	NumPairs         int    `json:"num_pairs"`
	SourceTraces     int    `json:"source_traces"`
	ScoreItems       int    `json:"score_items"`
	ActionScoreItems int    `json:"action_score_items"`
	// AsOfSeq is the log position the dataset was built from: everything up
	// to the request, so `critic audit` can rebuild it from the log.
	AsOfSeq int64 `json:"as_of_seq"`
	// IncludedFindings are the findings whose pairs the dataset trains on.
	IncludedFindings []string `json:"included_findings,omitempty"`
	// EvaluationFindings are those of them whose pairs the trainer holds
	// out to evaluate (rewardmodels.EvaluationFindings; the learning
	// report's included_in_evaluation). Absent in datasets built before.
	EvaluationFindings []string `json:"evaluation_findings,omitempty"`
	// Agreement is how far the members who labeled the selected traces
	// agreed (issue 36), as of the dataset: the learning report's
	// agreement. Absent in datasets built before it, and for a model that
	// learns from the automatic annotation (no member labels).
	Agreement *DatasetAgreement `json:"agreement,omitempty"`
}

// DatasetAgreement is the agreement of the member labels a dataset was
// built from (rewardmodels.TrainingAgreementOf): a reward model trained on
// human preferences is only as good as the preferences, so its learning
// report says how much of its data the team disputed, settled or left out.
// A target is a trace or one of its steps.
type DatasetAgreement struct {
	// Judged counts the targets with at least one member label (live,
	// not flagged as a label error).
	Judged int `json:"judged"`
	// CoRated counts those labeled by two or more members.
	CoRated int `json:"co_rated"`
	// Disputed counts the co-rated targets whose members disagree.
	Disputed int `json:"disputed"`
	// Adjudicated counts the targets with an admin's final judgment,
	// which the model learns instead of the members' labels.
	Adjudicated int `json:"adjudicated"`
	// Excluded counts the disputed, unadjudicated targets whose labels
	// training_config.exclude_disputed left out (0 without it).
	Excluded int `json:"excluded"`
	// Alpha is Krippendorff's alpha over the members' labels (interval
	// metric on the values as training weighs them), with its count of
	// co-rated targets and too_few below agreement.MinSample.
	Alpha agreement.Figure `json:"alpha"`
}

// RewardModelTrainingStartedV1 is a worker's claim on an attempt. Only a
// queued model with a built dataset can be claimed, at its stream's version,
// so a duplicate delivery cannot start it twice.
type RewardModelTrainingStartedV1 struct {
	ModelID      string `json:"model_id"`
	Attempt      int    `json:"attempt"`
	WorkerID     string `json:"worker_id"`
	LeaseSeconds int    `json:"lease_seconds"`
	// Compute is where the claiming worker runs: "local" (the API's own
	// in-process worker) or "worker" (a `critic worker` process). Absent on
	// claims recorded before it existed: the request's compute stands.
	Compute string `json:"compute,omitempty"`
}

// Progress is what a running job reports.
type Progress struct {
	Phase        string  `json:"phase"` // "training", "scoring", "uploading"
	Step         int     `json:"step"`
	TotalSteps   int     `json:"total_steps"`
	Loss         float64 `json:"loss"`
	TokensPerSec float64 `json:"tokens_per_sec"`
}

// RewardModelHeartbeatV1 renews a lease and reports progress.
type RewardModelHeartbeatV1 struct {
	ModelID  string   `json:"model_id"`
	Attempt  int      `json:"attempt"`
	WorkerID string   `json:"worker_id"`
	Progress Progress `json:"progress"`
}

// RewardModelTrainingSucceededV1 stores metrics and the checkpoint in the same
// event that marks the model succeeded (its scores follow in scores.* events
// appended in the same transaction).
type RewardModelTrainingSucceededV1 struct {
	ModelID           string          `json:"model_id"`
	Attempt           int             `json:"attempt"`
	WorkerID          string          `json:"worker_id"`
	Metrics           json.RawMessage `json:"metrics"`
	ArtifactKey       string          `json:"artifact_key"`
	NumPairs          int             `json:"num_pairs"`
	RewardStats       json.RawMessage `json:"reward_stats,omitempty"`
	ActionRewardStats json.RawMessage `json:"action_reward_stats,omitempty"`
}

// Failure reasons.
const (
	FailureTooFewPairs  = "too_few_pairs"
	FailureWorkerError  = "worker_error"
	FailureLeaseExpired = "lease_expired"
	FailureDataset      = "dataset_error"
	FailureExtraction   = "extraction_error"
)

// RewardModelTrainingFailedV1 ends an attempt. Error is what the user sees:
// the reason, or the last 2000 characters of the worker log.
type RewardModelTrainingFailedV1 struct {
	ModelID string `json:"model_id"`
	Attempt int    `json:"attempt"`
	Reason  string `json:"reason"`
	Error   string `json:"error"`
}

// Requeue reasons.
const (
	RequeueHandedBack   = "handed_back"
	RequeueLeaseExpired = "lease_expired"
)

// RewardModelTrainingRequeuedV1 puts a running attempt back in the queue.
// Detail says what happened, for the model's history and for the failure
// message should the last try be lost too.
type RewardModelTrainingRequeuedV1 struct {
	ModelID  string `json:"model_id"`
	Attempt  int    `json:"attempt"`
	WorkerID string `json:"worker_id"`
	Reason   string `json:"reason"` // handed_back | lease_expired
	Detail   string `json:"detail"`
	// LostRuns is how many runs of this attempt ended with an expired lease,
	// this one included (0 for a hand-back that follows none).
	LostRuns int `json:"lost_runs"`
}

// RewardModelRetriedV1 re-queues a failed model as a new attempt with the same
// id and trace selection.
type RewardModelRetriedV1 struct {
	ModelID string `json:"model_id"`
	Attempt int    `json:"attempt"`
	// FeedbackPlan is decided again on retry, so a provider configured
	// since the failure is used.
	FeedbackPlan *FeedbackPlan `json:"feedback_plan,omitempty"`
}

// Score events (stream scores/<model id>): raw rewards per trace revision and
// per action. A score for a revision that is no longer current is stale and
// read models ignore it.
const (
	TracesScored  = "scores.traces_scored.v1"
	ActionsScored = "scores.actions_scored.v1"
)

// ScoresStream names a model's score stream.
func ScoresStream(modelID string) string { return "scores/" + modelID }

// TraceScore is one trace's raw reward.
type TraceScore struct {
	TraceID  string  `json:"trace_id"`
	Revision int     `json:"revision"`
	Score    float64 `json:"score"`
}

// ActionScore is one action's raw reward and display credit.
type ActionScore struct {
	TraceID  string  `json:"trace_id"`
	StepID   string  `json:"step_id"`
	Revision int     `json:"revision"`
	Score    float64 `json:"score"`
	Credit   float64 `json:"credit"`
}

// TracesScoredV1 carries a batch of trace scores of one model.
type TracesScoredV1 struct {
	ModelID   string       `json:"model_id"`
	ModelName string       `json:"model_name"`
	Scores    []TraceScore `json:"scores"`
}

// ActionsScoredV1 carries a batch of action scores of one model.
type ActionsScoredV1 struct {
	ModelID   string        `json:"model_id"`
	ModelName string        `json:"model_name"`
	RunID     string        `json:"run_id,omitempty"` // the scoring run, when one asked for them
	Scores    []ActionScore `json:"scores"`
}

// Scoring runs (stream scoring/<trace id>/<model id>): one trace scored with a
// saved checkpoint on request. Concurrent requests reuse the active run.
const (
	ScoringRunRequested = "scoring_run.requested.v1"
	ScoringRunStarted   = "scoring_run.started.v1"
	ScoringRunSucceeded = "scoring_run.succeeded.v1"
	ScoringRunFailed    = "scoring_run.failed.v1"
	// ScoringRunRequeued hands a running run back to the queue: its worker
	// stopped (SIGTERM), or gave no result in time with tries left. The
	// dispatch projection publishes the job again.
	ScoringRunRequeued = "scoring_run.requeued.v1"
)

// ScoringRunRequeuedV1 puts a running run back in the queue.
type ScoringRunRequeuedV1 struct {
	RunID    string `json:"run_id"`
	TraceID  string `json:"trace_id"`
	ModelID  string `json:"model_id"`
	WorkerID string `json:"worker_id"`
	Reason   string `json:"reason"` // handed_back | lease_expired
	Detail   string `json:"detail"`
}

// ScoringStream names the runs of one (trace, model).
func ScoringStream(traceID, modelID string) string { return "scoring/" + traceID + "/" + modelID }

// ScoringRunRequestedV1 is POST /traces/{id}/score.
type ScoringRunRequestedV1 struct {
	RunID         string `json:"run_id"`
	TraceID       string `json:"trace_id"`
	ModelID       string `json:"model_id"`
	TraceRevision int    `json:"trace_revision"`
	ItemsKey      string `json:"items_key"` // blob: the trace's rendered texts to score
	// Automatic marks a run background scoring requested (spec 001
	// "Learned action credit"): its failures count against the revision's
	// automatic attempts. Absent on explicit requests and older logs.
	Automatic bool `json:"automatic,omitempty"`
	// BatchID is the background batch the run belongs to, if any.
	BatchID string `json:"batch_id,omitempty"`
}

// ScoringBatchRequested is background scoring's batch: up to eight traces
// one worker scores with one loaded checkpoint. It is appended in the same
// append as its runs' ScoringRunRequested events (stream
// scoringbatch/<batch id>); each run keeps its own stream and outcome.
const ScoringBatchRequested = "scoring_batch.requested.v1"

// ScoringBatchStream names a background batch's stream.
func ScoringBatchStream(batchID string) string { return "scoringbatch/" + batchID }

// ScoringBatchRun is one trace's run in a batch.
type ScoringBatchRun struct {
	TraceID string `json:"trace_id"`
	RunID   string `json:"run_id"`
}

// ScoringBatchRequestedV1 names a batch's model and runs.
type ScoringBatchRequestedV1 struct {
	BatchID string            `json:"batch_id"`
	ModelID string            `json:"model_id"`
	Runs    []ScoringBatchRun `json:"runs"`
}

// Background scoring of a ready model is paused and resumed by its owner
// (stream reward_model/<id>); a paused model still scores on request.
const (
	RewardModelScoringPaused  = "reward_model.scoring_paused.v1"
	RewardModelScoringResumed = "reward_model.scoring_resumed.v1"
)

// RewardModelScoringPausedV1 is PUT /reward-models/{id}/background-scoring
// {"paused": true}; RewardModelScoringResumed carries the same payload.
type RewardModelScoringPausedV1 struct {
	ModelID string `json:"model_id"`
}

// ScoringRunStartedV1 is a worker's claim on a run.
type ScoringRunStartedV1 struct {
	RunID    string `json:"run_id"`
	TraceID  string `json:"trace_id"`
	ModelID  string `json:"model_id"`
	WorkerID string `json:"worker_id"`
}

// ScoringRunSucceededV1 ends a run; its scores are in the same append.
type ScoringRunSucceededV1 struct {
	RunID   string `json:"run_id"`
	TraceID string `json:"trace_id"`
	ModelID string `json:"model_id"`
	// Automatic restates the run's request (background scoring's metrics
	// count its outcomes); absent on explicit runs and older logs.
	Automatic bool `json:"automatic,omitempty"`
}

// ScoringRunFailedV1 ends a run with an error the user sees.
type ScoringRunFailedV1 struct {
	RunID   string `json:"run_id"`
	TraceID string `json:"trace_id"`
	ModelID string `json:"model_id"`
	Error   string `json:"error"`
	// Automatic: see ScoringRunSucceededV1.
	Automatic bool `json:"automatic,omitempty"`
}
