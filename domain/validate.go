package domain

import (
	"fmt"
)

// ValidateTrace enforces the rules every canonical trace obeys, whichever
// adapter produced it: known roles, at least one non-system step, tool results
// paired with an earlier call by tool_call_id, object tool inputs, and spans
// that are unique, acyclic, time-ordered and point at existing steps. line is
// the JSONL line the trace came from (0 when not line-oriented) so the error
// tells the user where to look.
func ValidateTrace(t Trace, line int) error {
	if len(t.Steps) == 0 {
		return InvalidAt(line, "steps", "a trace needs at least one step")
	}
	calls := map[string]bool{}
	nonSystem := false
	for i, s := range t.Steps {
		field := fmt.Sprintf("steps[%d]", i)
		if !s.Role.Valid() {
			return InvalidAt(line, field+".role", "unknown role %q (expected system, user, assistant or tool)", string(s.Role))
		}
		if s.Role != RoleSystem {
			nonSystem = true
		}
		switch s.Role {
		case RoleAssistant:
			if s.ToolCallID != "" {
				calls[s.ToolCallID] = true
			}
		case RoleTool:
			if s.ToolCallID != "" && !calls[s.ToolCallID] {
				return InvalidAt(line, field+".tool_call_id", "tool result %q matches no earlier tool call", s.ToolCallID)
			}
		}
	}
	if !nonSystem {
		return InvalidAt(line, "steps", "a trace with only system steps has nothing to review")
	}
	return ValidateSpans(t.Spans, len(t.Steps), line)
}

// ValidateSpans checks the Span rules of the spec: unique ids, no parent cycle,
// end not before start, step indices in range. A parent that is absent is
// allowed (partial exports).
func ValidateSpans(spans []Span, steps int, line int) error {
	parent := make(map[string]string, len(spans))
	for i, sp := range spans {
		field := fmt.Sprintf("spans[%d]", i)
		if sp.ID == "" {
			return InvalidAt(line, field+".id", "span id is empty")
		}
		if _, dup := parent[sp.ID]; dup {
			return InvalidAt(line, field+".id", "duplicate span id %q", sp.ID)
		}
		p := ""
		if sp.ParentID != nil {
			p = *sp.ParentID
		}
		parent[sp.ID] = p
		if sp.EndNs < sp.StartNs {
			return InvalidAt(line, field+".end_ns", "span %q ends before it starts", sp.ID)
		}
		for _, idx := range sp.StepIndices {
			if idx < 0 || idx >= steps {
				return InvalidAt(line, field+".step_indices", "span %q references step %d, but the trace has %d steps", sp.ID, idx, steps)
			}
		}
	}
	for id := range parent {
		seen := map[string]bool{id: true}
		for cur := parent[id]; cur != ""; cur = parent[cur] {
			if seen[cur] {
				return InvalidAt(line, "spans", "span parents form a cycle through %q", cur)
			}
			seen[cur] = true
		}
	}
	return nil
}
