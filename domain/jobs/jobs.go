// Package jobs is the wire contract between the API and its workers, defined
// once: the job commands the dispatch projection publishes on Kafka, the
// requests and answers of the API's worker service (/api/v1/worker), the
// blob keys a job's inputs and outputs live under, and the bounds the API
// applies to what a worker hands it. The API side (projections/dispatch,
// handlers/workerapi, commands) and the worker side (gpuworker/worker and
// its client) both import it, so neither can drift from the other, and the
// worker needs nothing of the API's handlers or database code.
//
// Extending it: add a field with `omitempty` to the message that carries it
// (e.g. what an LLM feedback-extraction job needs); a field an older worker
// does not know is ignored by its JSON decoding. The worker service decodes
// strictly (unknown fields are 422), so roll out the API before the workers
// that send a new field. A new kind of job is one file here (its topic, its
// Kind registered with register, its message — a Message — and the payloads
// of its claim answer and result), one in commands (its actions, registered
// with onKind) and one in gpuworker/worker (its runner, registered with
// register); every kind shares the one route RouteJob (kinds.go).
//
// Pure types and functions: no I/O.
package jobs

import (
	"encoding/json"
	"fmt"

	"github.com/criticml/critic/domain/rewardmodels"
)

// Kafka topics of job commands and the consumer group every worker joins.
const (
	TopicTrain    = "critic.jobs.train"
	TopicScore    = "critic.jobs.score"
	ConsumerGroup = "workers"
)

// The kinds declared in this file: training (pulled; its topic carries
// wake-ups) and explicit scoring.
var (
	KindTrain = register("train", TopicTrain)
	KindScore = register("score", TopicScore)
)

// TrainJob is a critic.jobs.train value (key = model id): train one attempt.
type TrainJob struct {
	ModelID string `json:"model_id"`
	Attempt int    `json:"attempt"`
	OwnerID string `json:"owner_id"`
}

// JobID implements Message.
func (m TrainJob) JobID() string { return attempted(m.ModelID, m.Attempt) }

// ScoreJob is a critic.jobs.score value (key = run id): run one scoring run.
type ScoreJob struct {
	RunID   string `json:"run_id"`
	TraceID string `json:"trace_id"`
	ModelID string `json:"model_id"`
	OwnerID string `json:"owner_id"`
}

// JobID implements Message.
func (m ScoreJob) JobID() string {
	if m.TraceID == "" || m.ModelID == "" {
		return ""
	}
	return m.RunID
}

// ServicePrefix is where the worker service lives on the API.
const ServicePrefix = "/api/v1/worker"

// CodeConcurrentWrite is the error code of a 409 that says another write to
// the same stream won a race: unlike the worker service's other 409s (the
// job is not claimable), the same request may succeed when sent again.
const CodeConcurrentWrite = "concurrent_write"

// TrainingClaim is the answer to a training claim: what the attempt trains
// and where its inputs and outputs are, all chosen by the API.
type TrainingClaim struct {
	ModelID      string `json:"model_id"`
	OwnerID      string `json:"owner_id"`
	Name         string `json:"name"`
	BaseModel    string `json:"base_model"`
	DatasetKey   string `json:"dataset_key"`
	ArtifactKey  string `json:"artifact_key"`
	Attempt      int    `json:"attempt"`
	Epochs       int    `json:"epochs"`
	LeaseSeconds int    `json:"lease_seconds"`
	// CorrelationID is the id of the request that queued the attempt: a
	// worker that pulled it logs and reports under it.
	CorrelationID string `json:"correlation_id,omitempty"`
}

// Succeeded is a finished training attempt (the result of KindTrain). The
// checkpoint archive and the score files are in the blob store, under the
// keys ArtifactKey, ScoresKey and ActionScoresKey derive from the claim,
// before it is sent. ScoresKey/ActionScoresKey restate those keys ("" for
// action scores when the model has none); the API reads only the keys it
// derives itself and refuses a report naming any other.
type Succeeded struct {
	Metrics           json.RawMessage `json:"metrics"`
	RewardStats       json.RawMessage `json:"reward_stats"`
	ActionRewardStats json.RawMessage `json:"action_reward_stats"` // null when none
	ScoresKey         string          `json:"scores_key"`
	ActionScoresKey   string          `json:"action_scores_key"`
}

// ScoringClaim is the answer to a scoring claim.
type ScoringClaim struct {
	ItemsKey string `json:"items_key"`
}

// ActionScore is one scored action as a worker reports it (the API adds the
// trace revision it scored).
type ActionScore struct {
	TraceID string  `json:"trace_id"`
	StepID  string  `json:"step_id"`
	Score   float64 `json:"score"`
	Credit  float64 `json:"credit"`
}

// ScoringFinished is a scoring run's result (of KindScore).
type ScoringFinished struct {
	ActionScores []ActionScore `json:"action_scores"`
	// TraceScore is the whole trace's raw reward (ScoringItems.Trace);
	// absent from workers older than it.
	TraceScore *float64 `json:"trace_score,omitempty"`
}

// Ack is the worker service's answer to a report.
type Ack struct {
	OK bool `json:"ok"`
}

// ScoringItems is the blob a scoring worker reads (ItemsKey): the trace's
// actions rendered exactly as training renders them, and the whole trace.
type ScoringItems struct {
	RunID            string                    `json:"run_id"`
	ModelID          string                    `json:"model_id"`
	ArtifactKey      string                    `json:"artifact_key"`
	Trace            rewardmodels.ScoreItem    `json:"trace"`
	ActionScoreItems []rewardmodels.ActionItem `json:"action_score_items"`
	// MaxLength is the model's token window when it is not the default
	// (input version 3: 4096).
	MaxLength int `json:"max_length,omitempty"`
}

// ArtifactKey is where a model's checkpoint archive lives (spec 001).
func ArtifactKey(ownerID, modelID string) string {
	return "reward-models/" + ownerID + "/" + modelID + ".tar.gz"
}

// ScoresKey is where a training attempt's trace scores go (JSONL
// {trace_id, score}); it names the owner, the model and the attempt, so the
// API derives it from the job it issued and never reads a key a worker
// chose.
func ScoresKey(ownerID, modelID string, attempt int) string {
	return fmt.Sprintf("jobs/%s/%s/attempt-%d/scores.jsonl", ownerID, modelID, attempt)
}

// ActionScoresKey is where a training attempt's action scores go (JSONL
// {trace_id, step_id, score, credit}); see ScoresKey.
func ActionScoresKey(ownerID, modelID string, attempt int) string {
	return fmt.Sprintf("jobs/%s/%s/attempt-%d/action_scores.jsonl", ownerID, modelID, attempt)
}

// Bounds on the score files the API reads: a line is one small JSON object
// (ids and two numbers), and a file has at most one line per item of the
// dataset (plus blank lines).
const (
	MaxScoreLineBytes = 64 << 10
	scoreBytesPerItem = 4 << 10
)

// MaxScoreFileBytes is the largest score file the API reads for a dataset
// of items entries.
func MaxScoreFileBytes(items int) int64 {
	return int64(items)*scoreBytesPerItem + MaxScoreLineBytes
}

// TopicGepa carries GEPA run commands.
const TopicGepa = "critic.jobs.gepa"

// KindGepa is a GEPA run.
var KindGepa = register("gepa", TopicGepa)

// GepaJob is a critic.jobs.gepa value (key = run id): run one GEPA search.
type GepaJob struct {
	RunID   string `json:"run_id"`
	OwnerID string `json:"owner_id"`
}

// JobID implements Message.
func (m GepaJob) JobID() string { return m.RunID }

// GepaJobSpec is the job.json of a GEPA run (spec 001 job contract), plus
// where the worker finds its examples and the model's rendering.
type GepaJobSpec struct {
	Kind           string  `json:"kind"` // "gepa"
	RewardModelKey string  `json:"reward_model_key"`
	TaskModel      string  `json:"task_model"`
	TaskAPIBase    *string `json:"task_api_base"`
	// TaskAPIKey is the key the requester supplied for TaskAPIBase,
	// decrypted by the API for the claiming worker only; it travels in the
	// claim answer, never in a Kafka message, event or read model.
	TaskAPIKey      string `json:"task_api_key,omitempty"`
	ReflectionModel string `json:"reflection_model"`
	MaxMetricCalls  int    `json:"max_metric_calls"`
	ExamplesKey     string `json:"examples_key"`
	InputVersion    int    `json:"input_version,omitempty"`
}

// GepaClaim is the answer to a GEPA claim.
type GepaClaim struct {
	RunID        string      `json:"run_id"`
	OwnerID      string      `json:"owner_id"`
	Job          GepaJobSpec `json:"job"`
	LeaseSeconds int         `json:"lease_seconds"`
}

// GepaExamplesKey is where a run's gepa_examples.jsonl lives.
func GepaExamplesKey(ownerID, runID string) string {
	return "gepa/" + ownerID + "/" + runID + "/gepa_examples.jsonl"
}

// MaxGepaResultBytes bounds result.json: every candidate is a full SKILL.md.
const MaxGepaResultBytes = 8 << 20
