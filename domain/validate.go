package domain

import (
	"cmp"
	"fmt"
)

// ValidateTrace enforces the rules every canonical trace obeys, whichever
// adapter produced it: known roles, at least one non-system step, tool results
// paired with an earlier call by tool_call_id, object tool inputs, and spans
// that are unique, acyclic, time-ordered and point at existing steps. line is
// the JSONL line the trace came from (0 when not line-oriented) so the error
// tells the user where to look.
//
// Every string in the trace (ids, title, content, tool inputs, metadata,
// span fields) must also pass CheckText: every format and the OTLP
// receiver build their traces through here, so this is where imported text
// is made safe for the stores.
func ValidateTrace(t Trace, line int) error {
	if err := validateTraceText(t); err != nil {
		return AtLine(err, line)
	}
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

// validateTraceText applies CheckText to every string of t. Each cmp.Or
// returns the first failing check of its list, in the list's order.
func validateTraceText(t Trace) error {
	if err := cmp.Or(
		CheckText("id", t.ExternalID, MaxIDBytes),
		CheckText("title", t.Title, MaxTitleBytes),
		CheckValue("metadata", t.Metadata),
	); err != nil {
		return err
	}
	for i, s := range t.Steps {
		field := fmt.Sprintf("steps[%d]", i)
		if err := cmp.Or(
			CheckText(field+".role", string(s.Role), MaxNameBytes),
			CheckText(field+".content", s.Content, 0),
			CheckText(field+".tool_name", s.ToolName, MaxNameBytes),
			CheckText(field+".tool_call_id", s.ToolCallID, MaxIDBytes),
			CheckValue(field+".tool_input", s.ToolInput),
			CheckValue(field+".metadata", s.Metadata),
		); err != nil {
			return err
		}
	}
	for i, sp := range t.Spans {
		field := fmt.Sprintf("spans[%d]", i)
		// An absent parent or kind checks as "", which always passes.
		if err := cmp.Or(
			CheckText(field+".id", sp.ID, MaxIDBytes),
			CheckText(field+".parent_id", OrEmpty(sp.ParentID), MaxIDBytes),
			CheckText(field+".name", sp.Name, 0),
			CheckText(field+".kind", OrEmpty(sp.Kind), MaxNameBytes),
			CheckJSON(field+".input", sp.Input),
			CheckJSON(field+".output", sp.Output),
		); err != nil {
			return err
		}
	}
	return nil
}

// OrEmpty is *p, or "" for an absent optional field.
func OrEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
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
		parent[sp.ID] = OrEmpty(sp.ParentID)
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
