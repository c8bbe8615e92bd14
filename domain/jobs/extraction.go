package jobs

import (
	"fmt"

	"github.com/criticml/critic/domain/feedback"
)

// TopicExtract carries feedback-extraction jobs to the worker tier: models
// that learn from comments, user reactions and AI judgments are extracted
// by a worker before their dataset is built (DESIGN §9: model calls never
// run in the API).
const TopicExtract = "critic.jobs.extract"

// KindExtract is a model attempt's feedback extraction.
var KindExtract = register("extract", TopicExtract)

// ExtractJob is a critic.jobs.extract value (key = model id): extract one
// attempt's feedback.
type ExtractJob struct {
	ModelID string `json:"model_id"`
	Attempt int    `json:"attempt"`
	OwnerID string `json:"owner_id"`
}

// JobID implements Message.
func (m ExtractJob) JobID() string { return attempted(m.ModelID, m.Attempt) }

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

// ExtractionProgress is an extraction's heartbeat (KindExtract's beat):
// how many targets are done. Each trace's findings are a report (an
// events.RewardModelFeedbackExtractedV1, whose worker_id the API sets).
type ExtractionProgress struct {
	TargetsDone int `json:"targets_done"`
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
