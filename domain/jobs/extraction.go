package jobs

import (
	"fmt"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/feedback"
)

// TopicExtract carries feedback-extraction jobs to the worker tier: models
// that learn from comments, user reactions and AI judgments are extracted
// by a worker before their dataset is built (DESIGN §9: model calls never
// run in the API).
const TopicExtract = "critic.jobs.extract"

// ExtractJob is a critic.jobs.extract value (key = model id): extract one
// attempt's feedback.
type ExtractJob struct {
	ModelID string `json:"model_id"`
	Attempt int    `json:"attempt"`
	OwnerID string `json:"owner_id"`
}

// Extraction routes of the worker service, relative to ServicePrefix; an
// extraction worker claims an attempt, renews its lease with progress,
// reports each trace's findings and finishes (or fails) the extraction.
const (
	RouteClaimExtraction    = "POST /extraction/{model_id}/claim"
	RouteExtractionProgress = "POST /extraction/{model_id}/progress"
	RouteExtractionFindings = "POST /extraction/{model_id}/findings"
	RouteExtractionFinished = "POST /extraction/{model_id}/finished"
	// RouteExtractionHandBack returns a stopping worker's extraction to the
	// queue at once (its findings stay) instead of after its lease.
	RouteExtractionHandBack = "POST /extraction/{model_id}/handback"
)

// ExtractionPath is the URL path of an extraction route's action ("claim",
// "progress", "findings", "finished", "handback") for an escaped model id.
func ExtractionPath(escapedModelID, action string) string {
	return ServicePrefix + "/extraction/" + escapedModelID + "/" + action
}

// ExtractionClaim is the answer to an extraction claim: where the attempt's
// inputs are and how far an earlier claim got.
type ExtractionClaim struct {
	ModelID         string `json:"model_id"`
	OwnerID         string `json:"owner_id"`
	Attempt         int    `json:"attempt"`
	InputsKey       string `json:"inputs_key"`
	ClassifierModel string `json:"classifier_model"`
	LeaseSeconds    int    `json:"lease_seconds"`
	TargetsTotal    int    `json:"targets_total"`
	TargetsDone     int    `json:"targets_done"`
}

// ExtractionProgress renews an extraction lease with the targets done.
type ExtractionProgress struct {
	AttemptRequest
	TargetsDone int `json:"targets_done"`
}

// ExtractionFindings reports one trace's findings. WorkerID names the
// reporter; the embedded record's own worker_id is shadowed by it, so the
// API, not the worker, decides what the stored event says.
type ExtractionFindings struct {
	WorkerID string `json:"worker_id"`
	events.RewardModelFeedbackExtractedV1
}

// ExtractionFinished ends an extraction; a non-empty Error fails the model.
type ExtractionFinished struct {
	AttemptRequest
	Error string `json:"error"`
}

// ExtractionHandBack returns the holder's extraction to the queue (the
// worker is stopping); Reason says why, for the log.
type ExtractionHandBack struct {
	AttemptRequest
	Reason string `json:"reason"`
}

// ExtractionInputsKey is where an attempt's extraction inputs live.
func ExtractionInputsKey(ownerID, modelID string, attempt int) string {
	return fmt.Sprintf("extraction/%s/%s/attempt-%d.json", ownerID, modelID, attempt)
}

// ExtractionInputs is the blob an extraction worker reads (InputsKey): the
// selected traces still to assess, as of the event that queued the attempt.
type ExtractionInputs struct {
	ModelID         string   `json:"model_id"`
	Attempt         int      `json:"attempt"`
	ClassifierModel string   `json:"classifier_model"`
	PromptVersion   string   `json:"prompt_version"`
	Criteria        []string `json:"criteria"`
	ConfigHash      string   `json:"config_hash"`
	RubricDropout   bool     `json:"rubric_dropout"`
	// PairsNeeded is how many finding pairs fill max_pairs after the
	// explicit ratings and the findings already recorded: extraction stops
	// once it has them.
	PairsNeeded int              `json:"pairs_needed"`
	Traces      []feedback.Trace `json:"traces"`
}
