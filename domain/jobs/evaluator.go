package jobs

import (
	"encoding/json"

	"github.com/criticml/critic/domain/rewardmodels"
)

// TopicEvaluatorTrain carries shared-evaluator candidate jobs (key =
// candidate id): train a candidate on contributed supervision and score the
// frozen benchmark with it and with the incumbent.
const TopicEvaluatorTrain = "critic.jobs.evaluator_train"

// EvaluatorTrainJob is a critic.jobs.evaluator_train value.
type EvaluatorTrainJob struct {
	CandidateID string `json:"candidate_id"`
}

// Evaluator-candidate worker-service routes, relative to ServicePrefix;
// EvaluatorCandidatePath builds them.
const (
	RouteClaimEvaluatorCandidate     = "POST /evaluator/candidates/{candidate_id}/claim"
	RouteEvaluatorCandidateSucceeded = "POST /evaluator/candidates/{candidate_id}/succeeded"
	RouteEvaluatorCandidateFailed    = "POST /evaluator/candidates/{candidate_id}/failed"
	// RouteEvaluatorCandidateHandBack returns a running candidate to the
	// queue (the worker is stopping); the next free worker trains it.
	RouteEvaluatorCandidateHandBack = "POST /evaluator/candidates/{candidate_id}/handback"
	// RouteEvaluatorCandidateHeartbeat renews the holder's lease while it
	// trains and scores; 409 means the lease is lost (stop, report nothing).
	RouteEvaluatorCandidateHeartbeat = "POST /evaluator/candidates/{candidate_id}/heartbeat"
)

// EvaluatorCandidateHandBack is a RouteEvaluatorCandidateHandBack request;
// Reason is one line.
type EvaluatorCandidateHandBack struct {
	EvaluatorCandidateRequest
	Reason string `json:"reason"`
}

// EvaluatorCandidatePath is the URL path of a candidate route's action
// ("claim", "heartbeat", "succeeded", "failed", "handback") for an escaped candidate id.
func EvaluatorCandidatePath(escapedID, action string) string {
	return ServicePrefix + "/evaluator/candidates/" + escapedID + "/" + action
}

// EvaluatorCandidateRequest names the worker a candidate call is from.
type EvaluatorCandidateRequest struct {
	WorkerID string `json:"worker_id"`
}

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

// EvaluatorCandidateSucceeded reports a trained candidate: the checkpoint
// is at the claim's ArtifactKey before this is sent; margins are
// r(chosen) − r(rejected) per benchmark item id.
type EvaluatorCandidateSucceeded struct {
	EvaluatorCandidateRequest
	Metrics           json.RawMessage    `json:"metrics"`
	ActionRewardStats json.RawMessage    `json:"action_reward_stats"`
	CandidateMargins  map[string]float64 `json:"candidate_margins"`
	IncumbentMargins  map[string]float64 `json:"incumbent_margins"`
}

// EvaluatorCandidateFailed reports a failed candidate; Error is the end of
// the job's log.
type EvaluatorCandidateFailed struct {
	EvaluatorCandidateRequest
	Error string `json:"error"`
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

// EvaluatorScoreJob is a critic.jobs.evaluator_score value.
type EvaluatorScoreJob struct {
	TraceID string `json:"trace_id"`
}

// Automatic-scoring worker-service routes, relative to ServicePrefix;
// EvaluatorScoringPath builds them.
const (
	RouteClaimEvaluatorScoring  = "POST /evaluator/scoring/{trace_id}/claim"
	RouteEvaluatorScoringScored = "POST /evaluator/scoring/{trace_id}/scored"
	RouteEvaluatorScoringFailed = "POST /evaluator/scoring/{trace_id}/failed"
)

// EvaluatorScoringPath is the URL path of an automatic-scoring route's
// action ("claim", "scored", "failed") for an escaped trace id.
func EvaluatorScoringPath(escapedTraceID, action string) string {
	return ServicePrefix + "/evaluator/scoring/" + escapedTraceID + "/" + action
}

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

// EvaluatorScoringRequest names the worker and what a scoring report is
// about (the claim's revision and release).
type EvaluatorScoringRequest struct {
	WorkerID      string `json:"worker_id"`
	TraceRevision int    `json:"trace_revision"`
	Release       int    `json:"release"`
}

// EvaluatorScored reports the scores of every claimed input.
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

// EvaluatorScoringFailed reports a failed scoring job.
type EvaluatorScoringFailed struct {
	EvaluatorScoringRequest
	Error string `json:"error"`
}
