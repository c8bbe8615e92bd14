package jobs

import (
	"encoding/json"

	"github.com/criticml/critic/domain/rewardmodels"
)

// TopicEvaluatorTrain carries shared-evaluator candidate jobs (key =
// candidate id): train a candidate on contributed supervision and score the
// frozen benchmark with it and with the incumbent.
const TopicEvaluatorTrain = "critic.jobs.evaluator_train"

// KindEvaluatorTrain trains a shared-evaluator candidate.
var KindEvaluatorTrain = register("evaluator_train", TopicEvaluatorTrain)

// EvaluatorTrainJob is a critic.jobs.evaluator_train value.
type EvaluatorTrainJob struct {
	CandidateID string `json:"candidate_id"`
}

// JobID implements Message.
func (m EvaluatorTrainJob) JobID() string { return m.CandidateID }

// EvaluatorCandidateClaim is what a claimed candidate trains and where its
// inputs and outputs live, all chosen by the API.
type EvaluatorCandidateClaim struct {
	CandidateID string `json:"candidate_id"`
	BaseModel   string `json:"base_model"`
	Epochs      int    `json:"epochs"`
	DatasetKey  string `json:"dataset_key"`
	ArtifactKey string `json:"artifact_key"`
	// IncumbentArtifactKey is the live release's checkpoint the benchmark
	// is also scored with ("" before the first release).
	IncumbentArtifactKey string `json:"incumbent_artifact_key"`
	// LeaseSeconds is how long the claim lives without a heartbeat; the
	// worker renews it every third of that.
	LeaseSeconds int `json:"lease_seconds"`
}

// EvaluatorCandidateSucceeded is a trained candidate (the result of
// KindEvaluatorTrain): the checkpoint is at the claim's ArtifactKey before
// this is sent; margins are r(chosen) − r(rejected) per benchmark item id.
type EvaluatorCandidateSucceeded struct {
	Metrics           json.RawMessage    `json:"metrics"`
	ActionRewardStats json.RawMessage    `json:"action_reward_stats"`
	CandidateMargins  map[string]float64 `json:"candidate_margins"`
	IncumbentMargins  map[string]float64 `json:"incumbent_margins"`
}

// EvaluatorBenchmarkItem is one benchmark comparison the worker scores.
type EvaluatorBenchmarkItem struct {
	ID       string `json:"id"`
	Chosen   string `json:"chosen"`
	Rejected string `json:"rejected"`
}

// EvaluatorDataset is the blob a candidate job reads (DatasetKey): its
// training pairs (contributed human supervision only, with provenance) and
// the frozen benchmark it is tested on.
type EvaluatorDataset struct {
	CandidateID      string                     `json:"candidate_id"`
	BenchmarkVersion int                        `json:"benchmark_version"`
	Pairs            []rewardmodels.DatasetPair `json:"pairs"`
	Benchmark        []EvaluatorBenchmarkItem   `json:"benchmark"`
}

// EvaluatorDatasetKey is where a candidate's dataset lives.
func EvaluatorDatasetKey(candidateID string) string {
	return "evaluator/candidates/" + candidateID + "/dataset.json"
}

// EvaluatorArtifactKey is where a candidate's checkpoint archive lives.
func EvaluatorArtifactKey(candidateID string) string {
	return "evaluator/candidates/" + candidateID + "/model.tar.gz"
}

// TopicEvaluatorScore carries automatic-scoring jobs (key = trace id):
// score every action of a trace's current revision with the live release.
// The dispatch projection publishes one per imported or revised trace
// while a release is live, and one per trace when a release ships.
const TopicEvaluatorScore = "critic.jobs.evaluator_score"

// KindEvaluatorScore scores a trace with the shared evaluator.
var KindEvaluatorScore = register("evaluator_score", TopicEvaluatorScore)

// EvaluatorScoreJob is a critic.jobs.evaluator_score value.
type EvaluatorScoreJob struct {
	TraceID string `json:"trace_id"`
}

// JobID implements Message.
func (m EvaluatorScoreJob) JobID() string { return m.TraceID }

// EvaluatorScoringClaim is what a claimed scoring job scores: the trace
// revision's actions rendered as the evaluator reads them, and the live
// release's checkpoint.
type EvaluatorScoringClaim struct {
	TraceID       string                 `json:"trace_id"`
	TraceRevision int                    `json:"trace_revision"`
	Release       int                    `json:"release"`
	ArtifactKey   string                 `json:"artifact_key"`
	Inputs        []EvaluatorActionInput `json:"inputs"`
}

// EvaluatorActionInput is one action to score.
type EvaluatorActionInput struct {
	StepID string `json:"step_id"`
	Text   string `json:"text"`
}

// EvaluatorScoringRequest names what a scoring report is about (the
// claim's revision and release); it is the body of KindEvaluatorScore's
// fail, and WorkerID is the call's.
type EvaluatorScoringRequest struct {
	WorkerID      string `json:"-"`
	TraceRevision int    `json:"trace_revision"`
	Release       int    `json:"release"`
}

// EvaluatorScored is the scores of every claimed input (the result of
// KindEvaluatorScore).
type EvaluatorScored struct {
	EvaluatorScoringRequest
	Scores []EvaluatorActionScore `json:"scores"`
}

// EvaluatorActionScore is one scored action.
type EvaluatorActionScore struct {
	StepID string  `json:"step_id"`
	Score  float64 `json:"score"`
	Credit float64 `json:"credit"`
}

// EvaluatorScoringFailed is a failed scoring job: what it was about and
// the call's error.
type EvaluatorScoringFailed struct {
	EvaluatorScoringRequest
	Error string `json:"-"`
}
