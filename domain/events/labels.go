package events

import "github.com/criticml/critic/domain/labels"

// TraceStepsLabeled records step labels a labeling model wrote for chunks of
// a trace (spec 001 "Step labels", automatic annotation). A model's answer
// is a fact: replay and audit read these events and never call a model
// again. Labels are keyed by the stable chunk ids of labels.Chunks, so a
// grown trace keeps them and only new chunks are labeled.
const TraceStepsLabeled = "trace.steps_labeled.v1"

// TraceStepsLabeledV1 is one batch of labels for the revision they describe.
type TraceStepsLabeledV1 struct {
	TraceID string `json:"trace_id"`
	// Revision is the trace revision the labeler read.
	Revision int `json:"revision"`
	// Model, PromptVersion and SchemaVersion say who labeled and how.
	Model         string         `json:"model"`
	PromptVersion string         `json:"prompt_version"`
	SchemaVersion string         `json:"schema_version"`
	Labels        []labels.Label `json:"labels"`
	InputTokens   int            `json:"input_tokens,omitempty"`
	OutputTokens  int            `json:"output_tokens,omitempty"`
}
