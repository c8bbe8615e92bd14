package formats

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/criticml/critic/domain"
)

// Stash is the canonical Stash Trace Format: one trace per JSONL line. It is
// also what GET /export/traces writes, so an export re-imports unchanged.
type Stash struct{}

func (Stash) Name() string { return "stash" }
func (Stash) Description() string {
	return "Stash Trace Format JSONL: one {id?, title?, metadata?, steps, spans?} per line."
}

// Detect: the first line is an object with a "steps" array.
func (Stash) Detect(data []byte) bool {
	var probe struct {
		Steps []json.RawMessage `json:"steps"`
	}
	line := firstRecord(data)
	return firstJSONByte(line) == '{' && json.Unmarshal(line, &probe) == nil && probe.Steps != nil
}

type stashTrace struct {
	ID       json.RawMessage   `json:"id"`
	Title    *string           `json:"title"`
	Metadata map[string]any    `json:"metadata"`
	Steps    []json.RawMessage `json:"steps"`
	Spans    []domain.Span     `json:"spans"`
}

type stashStep struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolName   *string         `json:"tool_name"`
	ToolInput  json.RawMessage `json:"tool_input"`
	ToolCallID *string         `json:"tool_call_id"`
	Metadata   map[string]any  `json:"metadata"`
}

func (Stash) Parse(data []byte) ([]domain.Trace, error) {
	return objectLines(data, "steps", func(line int, raw []byte) (domain.Trace, error) {
		if t, ok := parseStashFast(raw, line); ok {
			return t, nil
		}
		var st stashTrace
		if err := decodeJSON(raw, &st); err != nil {
			return domain.Trace{}, err
		}
		t, err := st.canonical(line)
		if err != nil {
			return t, err
		}
		return t, domain.ValidateTrace(t, line)
	})
}

func (st stashTrace) canonical(line int) (domain.Trace, error) {
	t := domain.Trace{Title: domain.OrEmpty(st.Title), Metadata: st.Metadata, Spans: st.Spans}
	if len(st.ID) > 0 && string(st.ID) != "null" {
		id, err := scalarString(st.ID)
		if err != nil {
			return t, domain.InvalidAt(line, "id", "%v", err)
		}
		t.ExternalID = id
	}
	if st.Steps == nil {
		return t, domain.InvalidAt(line, "steps", "missing \"steps\" array")
	}
	for i, raw := range st.Steps {
		field := fmt.Sprintf("steps[%d]", i)
		var ss stashStep
		if firstJSONByte(raw) != '{' {
			return t, domain.InvalidAt(line, field, "a step must be a JSON object")
		}
		if err := decodeJSON(raw, &ss); err != nil {
			return t, domain.InvalidAt(line, field, "%v", err)
		}
		s := domain.Step{Role: domain.Role(ss.Role), ToolName: domain.OrEmpty(ss.ToolName), ToolCallID: domain.OrEmpty(ss.ToolCallID), Metadata: ss.Metadata}
		if !s.Role.Valid() {
			return t, domain.InvalidAt(line, field+".role", "unknown role %q (expected system, user, assistant or tool)", ss.Role)
		}
		if len(ss.Content) > 0 && string(ss.Content) != "null" {
			if err := json.Unmarshal(ss.Content, &s.Content); err != nil {
				return t, domain.InvalidAt(line, field+".content", "content must be a string")
			}
		}
		if len(ss.ToolInput) > 0 && string(ss.ToolInput) != "null" {
			if firstJSONByte(ss.ToolInput) != '{' {
				return t, domain.InvalidAt(line, field+".tool_input", "tool_input must be a JSON object")
			}
			if err := decodeJSON(ss.ToolInput, &s.ToolInput); err != nil {
				return t, domain.InvalidAt(line, field+".tool_input", "%v", err)
			}
		}
		t.Steps = append(t.Steps, s)
	}
	return t, nil
}

// stashTraceFast decodes a whole line in one pass (the steps typed, not kept
// raw and decoded again, their content not decoded a third time).
type stashTraceFast struct {
	ID       json.RawMessage  `json:"id"`
	Title    *string          `json:"title"`
	Metadata map[string]any   `json:"metadata"`
	Steps    []*stashStepFast `json:"steps"`
	Spans    []domain.Span    `json:"spans"`
}

type stashStepFast struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolName   *string        `json:"tool_name"`
	ToolInput  map[string]any `json:"tool_input"`
	ToolCallID *string        `json:"tool_call_id"`
	Metadata   map[string]any `json:"metadata"`
}

// parseStashFast parses a valid line in one decoding pass. It accepts only
// what the step-by-step path (stashTrace.canonical) accepts, with the same
// result; anything it does not accept (ok false) goes through that path,
// which says exactly what is wrong, where.
func parseStashFast(raw []byte, line int) (domain.Trace, bool) {
	var st stashTraceFast
	if decodeJSON(raw, &st) != nil || st.Steps == nil {
		return domain.Trace{}, false
	}
	t := domain.Trace{Title: domain.OrEmpty(st.Title), Metadata: st.Metadata, Spans: st.Spans}
	if len(st.ID) > 0 && string(st.ID) != "null" {
		id, err := scalarString(st.ID)
		if err != nil {
			return t, false
		}
		t.ExternalID = id
	}
	t.Steps = make([]domain.Step, 0, len(st.Steps))
	for _, ss := range st.Steps {
		if ss == nil { // null: not an object
			return t, false
		}
		s := domain.Step{Role: domain.Role(ss.Role), Content: domain.OrEmpty(ss.Content), ToolName: domain.OrEmpty(ss.ToolName),
			ToolInput: ss.ToolInput, ToolCallID: domain.OrEmpty(ss.ToolCallID), Metadata: ss.Metadata}
		if !s.Role.Valid() {
			return t, false
		}
		t.Steps = append(t.Steps, s)
	}
	if domain.ValidateTrace(t, line) != nil {
		return t, false
	}
	return t, true
}

// scalarString accepts a JSON string or number as an id.
func scalarString(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&n) == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("id must be a string or a number")
}
