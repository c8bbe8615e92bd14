package events

import "encoding/json"

// Annotation events live in their trace's stream: a re-import that removes
// steps removes the annotations on them in the same append, and every
// annotation records the trace revision it was made on (for `critic audit`).
const (
	AnnotationAdded   = "annotation.added.v1"
	AnnotationEdited  = "annotation.edited.v1"
	AnnotationRemoved = "annotation.removed.v1"
)

// Quote anchors a highlighted span inside a step's content the way page
// comments are anchored: the text plus what precedes and follows it.
type Quote struct {
	Text   string `json:"text"`
	Prefix string `json:"prefix"`
	Suffix string `json:"suffix"`
}

// AnnotationAddedV1 is a rating, a comment or both on a trace or one step
// — or a criterion's value (CriterionID and Value set, no rating or
// comment). Events written before criteria existed decode with neither.
type AnnotationAddedV1 struct {
	AnnotationID string  `json:"annotation_id"`
	TraceID      string  `json:"trace_id"`
	StepID       string  `json:"step_id,omitempty"` // "" = the whole trace
	Rating       *int    `json:"rating"`
	Comment      *string `json:"comment"`
	Quote        *Quote  `json:"quote,omitempty"`
	// AuthorID is the member who made it and AuthorName their name (issue
	// 36). Before members, it was the account's id: the account's implicit
	// admin, whose member id is that id, so old events need no rewrite.
	AuthorID      string `json:"author_id"`
	AuthorName    string `json:"author_name"`
	TraceRevision int    `json:"trace_revision"`
	// CriterionID and Value are a criterion's value: "yes"/"no" (binary),
	// a label name (categorical) or an integer 1..scale_max (scale), as
	// the JSON the reviewer sent.
	CriterionID string          `json:"criterion_id,omitempty"`
	Value       json.RawMessage `json:"value,omitempty"`
}

// AnnotationEditedV1 carries the annotation's values after the edit (not a
// diff), so applying it needs no earlier state.
type AnnotationEditedV1 struct {
	AnnotationID   string  `json:"annotation_id"`
	TraceID        string  `json:"trace_id"`
	Rating         *int    `json:"rating"`
	Comment        *string `json:"comment"`
	LabelError     bool    `json:"label_error"`
	LabelErrorNote *string `json:"label_error_note"`
	EditorID       string  `json:"editor_id"`
	// Value is a criterion value's value after the edit (absent for
	// ratings and comments, and in events written before criteria).
	Value json.RawMessage `json:"value,omitempty"`
}

// Reasons an annotation is removed.
const (
	RemovedByUser      = "deleted"
	RemovedStepRemoved = "step_removed" // its step disappeared in a re-import
	RemovedReplaced    = "replaced"     // its author rated the same target again (or gave the same criterion a new value)
)

// AnnotationRemovedV1 removes an annotation.
type AnnotationRemovedV1 struct {
	AnnotationID string `json:"annotation_id"`
	TraceID      string `json:"trace_id"`
	Reason       string `json:"reason"`
}
