package domain

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Rendering turns steps into the text a reward model reads. Training pairs
// and inference scoring must render identically (spec 001 "Learned action
// credit": "Training and inference use the same rendering"), so every caller
// goes through RenderUpTo; a format change here is a change to
// every trained model's input and needs retraining.
//
// The format, one block per non-system step, blocks joined with "\n":
//
//	user: <content>
//	assistant: <content>
//	tool: <content>
//
// An assistant step that calls a tool (ToolName set) adds its call on the
// next line, so the model sees the action itself, not only the prose:
//
//	assistant: <content>
//	[tool_call] <tool_name>(<tool_input as compact JSON>)
//
// and when its content is empty (the common case) the call follows the role
// directly: `assistant: [tool_call] lookup_order({"order_id":"1182"})`.
// The JSON has object keys sorted at every level (encoding/json's map order),
// no insignificant whitespace and no HTML escaping; a missing input is `{}`.
// Tool results render as `tool: <content>` without the tool name: the call
// above them already names it.
//
// System steps are never rendered: they are context the agent was given, not
// something it did, and GEPA (spec 004) must be able to change the system
// prompt without changing what the reward model sees.

// RenderVersion renders steps[0..i] in an input version. Version 1 is
// RenderUpTo. Version 3 keeps the same
// lines but in labelled sections, so the model can tell what it judges from
// what came before, for a 4,096-token window:
//
//	### Context
//	<steps before the action, as version 1>
//	### Action
//	<the action>
//
// and a whole trace is one section, "### Conversation". Only the end of a
// long text is kept when it is truncated, so the action always survives.
func RenderVersion(version int, steps []PairStep, i int, whole bool) string {
	if version != 3 {
		return RenderUpTo(steps, i)
	}
	if i >= len(steps) {
		i = len(steps) - 1
	}
	if whole {
		return "### Conversation\n" + RenderUpTo(steps, i)
	}
	if i < 0 {
		return ""
	}
	return V3Sections(RenderUpTo(steps, i-1), RenderUpTo(steps[i:i+1], 0))
}

// V3Sections joins a rendered context and action as input version 3 does.
func V3Sections(context, action string) string {
	return "### Context\n" + context + "\n### Action\n" + action
}

// RenderUpTo renders steps[0..i] (inclusive): a step target is its prior
// context followed by the step, ending before any later tool result or user
// message. i beyond the end renders everything; i < 0 renders nothing.
func RenderUpTo(steps []PairStep, i int) string {
	if i >= len(steps) {
		i = len(steps) - 1
	}
	var b strings.Builder
	for k := 0; k <= i; k++ {
		st := steps[k]
		if st.Role == RoleSystem {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		renderStep(&b, st)
	}
	return b.String()
}

func renderStep(b *strings.Builder, st PairStep) {
	b.WriteString(string(st.Role))
	b.WriteString(": ")
	if !st.IsToolCall() {
		b.WriteString(st.Content)
		return
	}
	if st.Content != "" {
		b.WriteString(st.Content)
		b.WriteByte('\n')
	}
	b.WriteString("[tool_call] ")
	b.WriteString(st.ToolName)
	b.WriteByte('(')
	b.WriteString(compactJSON(st.ToolInput))
	b.WriteByte(')')
}

// compactJSON encodes v with sorted keys and without HTML escaping, so `<`
// in an argument stays `<` for the tokenizer.
func compactJSON(v map[string]any) string {
	if v == nil {
		return "{}"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only unencodable values (channels, NaN) get here; tool inputs come
		// from JSON, so this is a programming error surfaced in the text.
		return `{"error":"unencodable tool input"}`
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
