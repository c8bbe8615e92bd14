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
// of one revision that have no label yet. It names what a title job names.
type LabelJob = TitleJob

var _ = triggeredBy(KindLabel, labelJobOf)

// labelJobOf is the label job an event asks for: every import and revision
// (first import, re-import, session sync, OTLP rebuild) and every labeling
// retry queues the trace; the worker service answers "not needed" for
// revisions without an agent response, with imported labels, or with
// nothing new to label, so a job with nothing to do costs no model call.
func labelJobOf(e events.Envelope) (Message, bool) {
	var p struct {
		TraceID  string `json:"trace_id"`
		Revision int    `json:"revision"`
	}
	switch e.Type {
	case events.TraceImported, events.TraceRevised, events.TraceLabelingRequested:
		if e.Decode(&p) == nil && p.TraceID != "" {
			return LabelJob{TraceID: p.TraceID, Revision: p.Revision, OwnerID: e.OwnerID}, true
		}
	}
	return nil, false
}

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
