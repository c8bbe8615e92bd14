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

// TraceLabelingFailed records that the step labeler could not label some
// chunks of a revision (the model failed, or its answers did not validate).
// The labels it did get are recorded beside it as trace.steps_labeled; the
// failure is what GET /traces/{id} shows as labeling state "failed" until a
// retry (trace.labeling_requested) or a new revision.
const TraceLabelingFailed = "trace.labeling_failed.v1"

// TraceLabelingFailedV1 is one failed labeling run of one revision.
type TraceLabelingFailedV1 struct {
	TraceID  string `json:"trace_id"`
	Revision int    `json:"revision"`
	Model    string `json:"model"`
	// Failed is how many chunks got no label; Error says why (the last
	// failure, naming the model and what went wrong).
	Failed int    `json:"failed"`
	Error  string `json:"error"`
}

// TraceLabelingRequested is a user asking for the trace's missing labels
// again (POST /traces/{id}/labeling/retry) or for all of them anew (the
// rescore control, POST /traces/{id}/labeling/rescore): the dispatch
// projection queues a label job for the revision. Labels already recorded
// are kept until a new label of the same chunk supersedes them.
const TraceLabelingRequested = "trace.labeling_requested.v1"

// TraceLabelingRequestedV1 names the revision to label.
type TraceLabelingRequestedV1 struct {
	TraceID  string `json:"trace_id"`
	Revision int    `json:"revision"`
	// Relabel asks for every chunk, not only those without a label: the
	// labels recorded before it count as missing until superseded.
	Relabel bool `json:"relabel,omitempty"`
}
