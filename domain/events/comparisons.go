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
	// SideModelA and SideModelB are two personal reward models' preferred
	// actions for the same prior context (source "models"): model_a is the
	// comparison's model_id, model_b its other_model_id.
	SideModelA = "model_a"
	SideModelB = "model_b"
	// Where a comparison's two actions came from.
	ComparisonFromFinding = "finding" // the original action and a finding's alternative
	ComparisonFromModels  = "models"  // two models' preferred actions
	ChoiceLeft            = "left"
	ChoiceRight           = "right"
	ChoiceTie             = "tie"
)

// ComparisonSide is one action as the reviewer saw it.
type ComparisonSide struct {
	// Kind is SideOriginal or SideAlternative.
	Kind string `json:"kind"`
	// Action is the rendered action (`<role>: <content>`).
	Action string `json:"action"`
	// ModelID, TraceID and StepID say, for a models comparison, which
	// model preferred this action and where it was taken.
	ModelID string `json:"model_id,omitempty"`
	TraceID string `json:"trace_id,omitempty"`
	StepID  string `json:"step_id,omitempty"`
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
	// Source is where the two actions came from: "finding" (the original
	// and a learning finding's alternative) or "models" (two personal
	// reward models' preferred actions; FindingID is then the comparison's
	// key, models:<other model id>:<context id>, and the event lives on the
	// stream of model_a's preferred action's trace).
	Source    string `json:"source"`
	FindingID string `json:"finding_id"`
	ModelID   string `json:"model_id"`
	Attempt   int    `json:"attempt"`
	// OtherModelID and ContextID identify a models comparison: model_b and
	// a hash of the shared prior context.
	OtherModelID string `json:"other_model_id,omitempty"`
	ContextID    string `json:"context_id,omitempty"`
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
