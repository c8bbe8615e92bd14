package events

import "github.com/criticml/critic/domain"

// Event types of the trace aggregate.
const (
	TraceImported = "trace.imported.v1"
	TraceRevised  = "trace.revised.v1"
	TraceDeleted  = "trace.deleted.v1"
)

// StepRecord is a step with its immutable id and position, as stored.
type StepRecord struct {
	ID    string `json:"id"`
	Index int    `json:"index"`
	domain.Step
}

// TraceImportedV1 is the first revision of a trace (or the first after it was
// deleted). It carries the whole canonical trace.
type TraceImportedV1 struct {
	TraceID      string         `json:"trace_id"`
	ExternalID   string         `json:"external_id,omitempty"`
	Title        string         `json:"title"`
	SourceFormat string         `json:"source_format"`
	SourceID     string         `json:"source_id,omitempty"` // explicit source id, when one was given
	Metadata     map[string]any `json:"metadata,omitempty"`
	Revision     int            `json:"revision"`
	Steps        []StepRecord   `json:"steps"`
	Spans        []domain.Span  `json:"spans,omitempty"`
	// TitleDerived: the import had no title and Title is the deterministic
	// fallback, until a trace.titled event replaces it.
	TitleDerived bool `json:"title_derived,omitempty"`
}

// Revision modes of TraceRevisedV1.
const (
	RevisionReplaced = "replaced" // every step replaced (re-import)
	RevisionAppended = "appended" // steps added at the end (session sync)
)

// TraceRevisedV1 is a later revision. With Mode "replaced" Steps holds the whole
// new step list and RemovedStepIDs the ids that no longer exist; with
// "appended" Steps holds only the new steps and existing ids are kept.
// Spans is the whole span tree unless SpansDelta says it holds only the
// spans that are new or changed (see SpansDelta).
type TraceRevisedV1 struct {
	TraceID        string         `json:"trace_id"`
	Revision       int            `json:"revision"`
	Mode           string         `json:"mode"`
	Title          string         `json:"title"`
	SourceFormat   string         `json:"source_format"`
	SourceID       string         `json:"source_id,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
	Steps          []StepRecord   `json:"steps"`
	RemovedStepIDs []string       `json:"removed_step_ids,omitempty"`
	Spans          []domain.Span  `json:"spans,omitempty"`
	// SpansDelta (appended revisions only): Spans holds the spans that are
	// new or changed since the previous revision; a changed span keeps its
	// place, new ones follow the stored ones in order, the others stay as
	// they were. A live OTLP trace grows a span at a time and each LLM
	// span's input re-sends the conversation so far: carrying the whole
	// tree in every revision made a 200-call run write 284 MB of
	// revisions and each new span cost seconds. Revisions written before
	// it, and replaced ones, carry the whole tree.
	SpansDelta bool `json:"spans_delta,omitempty"`
	// SpanOrder (with SpansDelta) is every span id of the tree in order when
	// the revision moved spans: a span that starts before the stored ones
	// arrived (an agent run's root, which ends last). The spans not in
	// Spans keep their content and take these places. Empty: the stored
	// spans keep their places and the new ones follow them. A process older
	// than this field would put the moved spans last: upgrade all together.
	SpanOrder []string `json:"span_order,omitempty"`
	// TitleDerived: see TraceImportedV1.
	TitleDerived bool `json:"title_derived,omitempty"`
}

// TraceDeletedV1 removes a trace from every read model; the log keeps the fact.
type TraceDeletedV1 struct {
	TraceID string `json:"trace_id"`
}

// TraceTitled is a title the fast model wrote for a trace imported without
// one (DESIGN §9: a model's answer is a fact). Imports never wait for it.
const TraceTitled = "trace.titled.v1"

// TraceTitledV1 replaces the derived title of one revision.
type TraceTitledV1 struct {
	TraceID       string     `json:"trace_id"`
	Revision      int        `json:"revision"`
	Title         string     `json:"title"`
	Model         string     `json:"model"`
	PromptVersion string     `json:"prompt_version"`
	Usage         []LLMUsage `json:"usage"`
}
