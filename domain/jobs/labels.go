package jobs

import (
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
)

// TopicLabel carries step-label jobs (spec 001 "Step labels"): the dispatch
// projection publishes one for every imported or revised trace (import,
// re-import, session sync, OTLP rebuild) and for every labeling retry, when
// the deployment has a step-label model.
const TopicLabel = "critic.jobs.label"

// KindLabel labels a trace's chunks with the step-label model.
var KindLabel = register("label", TopicLabel)

// LabelJob is a critic.jobs.label value (key = trace id): label the chunks
// of one revision that have no label yet.
type LabelJob struct {
	TraceID  string `json:"trace_id"`
	Revision int    `json:"revision"`
	OwnerID  string `json:"owner_id"`
}

// JobID implements Message.
func (m LabelJob) JobID() string { return m.TraceID }

// LabelSource is the answer to a KindLabel claim: the revision's steps and the chunk ids that
// already carry a label (recorded by a model, or imported in step
// metadata). Needed is false when the revision is no longer current, the
// trace is gone, the agent has not responded yet, or nothing is left to
// label — a duplicate or replayed job then costs no model call.
type LabelSource struct {
	TraceID  string        `json:"trace_id"`
	Revision int           `json:"revision"`
	Needed   bool          `json:"needed"`
	Steps    []domain.Step `json:"steps"`
	Labeled  []string      `json:"labeled"`
}

// LabelReport records labels for chunks of a revision (a KindLabel report:
// a labeler reports batches as it goes, so progress shows while a large
// trace is labeled).
type LabelReport struct {
	Model         string          `json:"model"`
	PromptVersion string          `json:"prompt_version"`
	Labels        []labels.Label  `json:"labels"`
	Usage         events.LLMUsage `json:"usage"`
}

// LabelFailure is what a failed labeling run could not label (the body of
// KindLabel's fail; the call's error is the message).
type LabelFailure struct {
	Model  string `json:"model"`
	Failed int    `json:"failed"`
}

// MaxLabelError bounds the reason a failure stores.
const MaxLabelError = 2000
