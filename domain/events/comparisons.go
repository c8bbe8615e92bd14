package events

// ComparisonReviewed is a person's verdict between two actions for the same
// prior context (spec 002 "The shared evaluator": independently reviewed
// comparisons). It lives on the trace's stream, so the trace's consent and
// deletion govern it like every other supervision of the trace.
const ComparisonReviewed = "comparison.reviewed.v1"

// Comparison sides and choices.
const (
	SideOriginal    = "original"    // the action the agent took
	SideAlternative = "alternative" // an AI-generated alternative from a finding
	ChoiceLeft      = "left"
	ChoiceRight     = "right"
	ChoiceTie       = "tie"
)

// ComparisonSide is one action as the reviewer saw it.
type ComparisonSide struct {
	// Kind is SideOriginal or SideAlternative.
	Kind string `json:"kind"`
	// Action is the rendered action (`<role>: <content>`).
	Action string `json:"action"`
}

// ComparisonReviewedV1 is one reviewed comparison with its full provenance:
// who reviewed it, what was on the left and on the right (the randomised
// presentation order), what they picked, and which finding proposed the
// alternative, at which trace revision.
type ComparisonReviewedV1 struct {
	ComparisonID  string `json:"comparison_id"`
	TraceID       string `json:"trace_id"`
	TraceRevision int    `json:"trace_revision"`
	StepID        string `json:"step_id"`
	StepIndex     int    `json:"step_index"`
	ToolName      string `json:"tool_name,omitempty"`
	ReviewerID    string `json:"reviewer_id"`
	// Source is where the alternative came from: "finding" (a learning
	// finding of a reward model's feedback extraction).
	Source    string `json:"source"`
	FindingID string `json:"finding_id"`
	ModelID   string `json:"model_id"`
	Attempt   int    `json:"attempt"`
	// Context is everything before the action, rendered (system steps
	// excluded): what both sides continue.
	Context string         `json:"context"`
	Left    ComparisonSide `json:"left"`
	Right   ComparisonSide `json:"right"`
	// Choice is left, right or tie; Preferred the kind it names (or tie).
	Choice    string  `json:"choice"`
	Preferred string  `json:"preferred"`
	Comment   *string `json:"comment,omitempty"`
}
