package domain

import "encoding/json"

// Role is who produced a step. Only these four exist in the canonical trace;
// every adapter maps its source's roles onto them.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Valid reports whether r is one of the four canonical roles.
func (r Role) Valid() bool {
	switch r {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		return true
	}
	return false
}

// Step is one message of the canonical trace (Stash Trace Format). A tool call is
// an assistant step with ToolName/ToolInput/ToolCallID; its result is a tool step
// with the same ToolCallID. A call without arguments has ToolInput {} (an
// empty, non-nil map), which omitzero keeps through every encoding — "called
// with no arguments" is not "no tool input".
type Step struct {
	Role       Role           `json:"role"`
	Content    string         `json:"content"`
	ToolName   string         `json:"tool_name,omitempty"`
	ToolInput  map[string]any `json:"tool_input,omitzero"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// IsToolCall reports whether the step is an assistant action that calls a tool.
func (s Step) IsToolCall() bool { return s.Role == RoleAssistant && s.ToolName != "" }

// Span is a timed operation recorded by a tracing system (OpenTelemetry). Spans
// live beside the steps: untimed formats have none, and no duration is ever
// inferred from step order. Nanosecond times are int64 here and decimal strings
// in JSON so JavaScript clients keep their precision.
type Span struct {
	ID          string          `json:"id"`
	ParentID    *string         `json:"parent_id"`
	Name        string          `json:"name"`
	Kind        *string         `json:"kind"`
	StartNs     int64           `json:"start_ns,string"`
	EndNs       int64           `json:"end_ns,string"`
	Input       json.RawMessage `json:"input"`
	Output      json.RawMessage `json:"output"`
	StepIndices []int           `json:"step_indices"`
}

// Trace is the canonical trace every adapter produces and the unit of import.
type Trace struct {
	// ExternalID is the id the source gave the trace; re-importing it for the
	// same owner replaces (or, for session formats, syncs) the stored trace.
	ExternalID string         `json:"id,omitempty"`
	Title      string         `json:"title,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Steps      []Step         `json:"steps"`
	Spans      []Span         `json:"spans,omitempty"`
	// SessionSync marks a snapshot of a growing agent session (Claude Code,
	// Codex): a re-import appends new steps and keeps existing step ids instead
	// of replacing them.
	SessionSync bool `json:"-"`
	// Annotations are the reviews the source kept with the trace (Langfuse
	// scores), imported as annotations authored by the source so a team
	// that migrates keeps its evaluations.
	Annotations []ImportedAnnotation `json:"-"`
}

// ImportedAnnotation is one review a source recorded on a whole trace.
type ImportedAnnotation struct {
	// Key identifies it within its source (a score id): the same review
	// imported again is not added twice.
	Key     string
	Rating  *int // +1 / -1 for a boolean verdict; nil for other scores
	Comment string
	Author  string // the source, e.g. "import:langfuse"
}

// CanonicalToolInput is a tool input's JSON in one spelling whatever
// decoded it: numbers as encoding/json writes a float64 (a trace rebuilt
// from its events holds json.Number "1.0", the read model float64 1). Ids
// and hashes derived from a step (chunk ids, evidence hashes) use it, so the
// API's command side and its read side always derive the same ones.
func CanonicalToolInput(in map[string]any) []byte {
	b, err := json.Marshal(in)
	if err != nil {
		return b
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}
