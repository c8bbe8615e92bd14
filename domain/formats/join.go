package formats

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/criticml/critic/domain"
)

// This file holds what the per-LLM-call formats (otel, langfuse, langsmith)
// share: joining the calls into one conversation, and decoding the many chat
// message dialects those tools record into canonical steps.

// llmCall is one recorded LLM request: the messages it was sent (which re-send
// the whole history so far) and the messages it produced.
type llmCall struct {
	Input  []domain.Step
	Output []domain.Step
	// InputTime stamps the new input steps (the call's start) and OutputTime
	// the output steps (the call's end); "" leaves steps untimed.
	InputTime  string
	OutputTime string
	// Unordered says the input's order is partly unknown: it came as one
	// log record per message, several stamped with the same millisecond
	// (SimpleLogRecordProcessor), in requests that race. joinCalls then
	// takes the re-sent history in the order the conversation already
	// holds it (alignToConversation).
	Unordered bool
}

// joinCalls turns calls (already in start order) into one conversation.
//
// Every call re-sends the history, so for each call only what the
// conversation does not hold yet is appended: its new input messages, then
// its output. The new input messages are found in three ways, in order:
//
//  1. The conversation is a prefix of the input (the normal case): the rest
//     of the input is new.
//  2. Otherwise the history was edited or truncated (a sliding window, a
//     summary, a shortened tool result). The input is searched backwards for
//     the conversation's last step; everything after its last occurrence is
//     new. Edited older messages are not repeated.
//  3. If the last step is not in the input either (the previous output was
//     discarded, or a retry re-sent an older history), the suffix of the
//     input after its longest common prefix with the conversation is
//     appended, so nothing the model saw is lost even if it repeats.
//
// Reasoning steps are skipped when comparing: models' reasoning is usually
// not re-sent. produced[i] lists the indices of the steps call i added.
func joinCalls(calls []llmCall) (steps []domain.Step, produced [][]int) {
	steps, produced = joinMore(nil, calls)
	return finishSteps(steps), produced
}

// joinMore is joinCalls's work before finishSteps, from steps that earlier
// calls produced (joinCalls with them first gives the same steps: each call
// is joined to the conversation so far alone), so a conversation that grew
// by a call joins that call only (SpanMemo). steps is only appended to.
func joinMore(steps []domain.Step, calls []llmCall) (_ []domain.Step, produced [][]int) {
	produced = make([][]int, len(calls))
	for ci, c := range calls {
		conv := []int{} // indices of non-reasoning steps of the conversation
		for i, s := range steps {
			if !isReasoning(s) {
				conv = append(conv, i)
			}
		}
		if c.Unordered {
			c.Input = alignToConversation(c.Input, steps, conv)
		}
		c.Output = outputAfterInput(c.Input, c.Output)
		input := withoutReasoning(c.Input)
		common := 0
		for common < len(conv) && common < len(input) && sameStep(steps[conv[common]], input[common]) {
			common++
		}
		start := common
		if common < len(conv) && len(conv) > 0 {
			last := steps[conv[len(conv)-1]]
			for j, i := range slices.Backward(input) {
				if sameStep(i, last) {
					start = j + 1
					break
				}
			}
			start = max(start, common)
		}
		// Reasoning steps in the input are kept when they are new.
		newIn := newInputSteps(c.Input, input, start)
		for _, s := range newIn {
			produced[ci] = append(produced[ci], len(steps))
			steps = append(steps, withTimestamp(s, c.InputTime))
		}
		for _, s := range c.Output {
			produced[ci] = append(produced[ci], len(steps))
			steps = append(steps, withTimestamp(s, c.OutputTime))
		}
	}
	return steps, produced
}

// alignToConversation reorders an input whose order is partly unknown so
// that the history it re-sends comes first, in the conversation's order, and
// its other messages follow in the order given. When the input does not hold
// every message of the conversation (the history was edited or truncated),
// it is returned as given and joinCalls's other rules apply.
func alignToConversation(input, steps []domain.Step, conv []int) []domain.Step {
	if len(conv) == 0 {
		return input
	}
	used := make([]bool, len(input))
	head := make([]domain.Step, 0, len(input))
history:
	for _, ci := range conv {
		for j, s := range input {
			if !used[j] && sameStep(s, steps[ci]) {
				used[j] = true
				head = append(head, s)
				continue history
			}
		}
		return input // a message of the conversation the input does not hold
	}
	for j, s := range input {
		if !used[j] {
			head = append(head, s)
		}
	}
	return head
}

// outputAfterInput drops a re-sent history from an output: some frameworks
// (LangGraph state, agents returning {messages}) record the whole message
// list as the output, not only what the model produced.
func outputAfterInput(in, out []domain.Step) []domain.Step {
	if len(in) == 0 || len(out) <= len(in) || !stepsPrefix(in, out) {
		return out
	}
	return out[len(in):]
}

// newInputSteps maps "input without reasoning from index start" back onto
// the original input, so reasoning steps after the cut are kept in place.
func newInputSteps(orig, filtered []domain.Step, start int) []domain.Step {
	if start >= len(filtered) {
		return nil
	}
	seen := 0
	for i, s := range orig {
		if isReasoning(s) {
			continue
		}
		if seen == start {
			return orig[i:]
		}
		seen++
	}
	return nil
}

func withoutReasoning(in []domain.Step) []domain.Step {
	return slices.DeleteFunc(slices.Clone(in), isReasoning)
}

func isReasoning(s domain.Step) bool { return s.Metadata["reasoning"] == true }

// sameStep compares what a model sees of a message: role, text, tool call.
// Whitespace at the ends is ignored because SDKs trim re-sent text.
func sameStep(a, b domain.Step) bool {
	if a.Role != b.Role || strings.TrimSpace(a.Content) != strings.TrimSpace(b.Content) ||
		a.ToolCallID != b.ToolCallID {
		return false
	}
	if a.Role == domain.RoleAssistant && a.ToolName != b.ToolName {
		return false
	}
	if len(a.ToolInput) == 0 && len(b.ToolInput) == 0 {
		return true
	}
	// Equal values marshal alike; re-sent history is mostly equal, and
	// joinCalls compares every call's input with the conversation so far.
	if reflect.DeepEqual(a.ToolInput, b.ToolInput) {
		return true
	}
	ja, _ := json.Marshal(a.ToolInput)
	jb, _ := json.Marshal(b.ToolInput)
	return bytes.Equal(ja, jb)
}

// withTimestamp returns s with metadata.timestamp set when the source timed it.
func withTimestamp(s domain.Step, ts string) domain.Step {
	if ts == "" {
		return s
	}
	if _, ok := s.Metadata["timestamp"]; ok {
		return s
	}
	md := make(map[string]any, len(s.Metadata)+1)
	maps.Copy(md, s.Metadata)
	md["timestamp"] = ts
	s.Metadata = md
	return s
}

// finishSteps gives tool results the name of the call they answer, and
// unpairs a tool result whose call is not in the trace (its LLM call was not
// exported, or the history was cut before the first exported call): the
// result is kept, its id moves to metadata.unmatched_tool_call_id, because a
// dangling id would make the whole import fail validation.
func finishSteps(steps []domain.Step) []domain.Step {
	names := map[string]string{}
	for i, s := range steps {
		switch s.Role {
		case domain.RoleAssistant:
			if s.ToolCallID != "" {
				names[s.ToolCallID] = s.ToolName
			}
		case domain.RoleTool:
			if s.ToolCallID == "" {
				continue
			}
			name, ok := names[s.ToolCallID]
			if !ok {
				md := map[string]any{}
				maps.Copy(md, s.Metadata)
				md["unmatched_tool_call_id"] = s.ToolCallID
				s.Metadata = md
				s.ToolCallID = ""
			} else if s.ToolName == "" {
				s.ToolName = name
			}
			steps[i] = s
		}
	}
	return steps
}

// builtSpan is sp as a trace joined from LLM calls lists it: a kind and a
// parent only when the source names them, and an empty list (not null)
// for a span that produced no step.
func builtSpan(sp domain.Span, kind, parent string) domain.Span {
	if kind != "" {
		sp.Kind = &kind
	}
	if parent != "" {
		sp.ParentID = &parent
	}
	if sp.StepIndices == nil {
		sp.StepIndices = []int{}
	}
	return sp
}

// rfc3339Nanos renders a Unix-nanosecond time the way step timestamps are
// stored: RFC 3339, UTC, with nanoseconds.
func rfc3339Nanos(ns int64) string {
	if ns <= 0 {
		return ""
	}
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000000Z07:00")
}

// ---------------------------------------------------------------------------
// Chat message dialects → steps

// llmRole maps every role spelling the supported tools use onto a canonical
// role; "" when the value is not a role.
func llmRole(r string) domain.Role {
	switch strings.ToLower(strings.TrimSpace(r)) {
	case "system", "developer":
		return domain.RoleSystem
	case "user", "human":
		return domain.RoleUser
	case "assistant", "ai", "model", "bot":
		return domain.RoleAssistant
	case "tool", "function", "ipython", "tool_result":
		return domain.RoleTool
	}
	return ""
}

// langChainRoles maps LangChain message class names.
var langChainRoles = map[string]domain.Role{
	"HumanMessage": domain.RoleUser, "HumanMessageChunk": domain.RoleUser,
	"AIMessage": domain.RoleAssistant, "AIMessageChunk": domain.RoleAssistant,
	"SystemMessage": domain.RoleSystem, "SystemMessageChunk": domain.RoleSystem,
	"ToolMessage": domain.RoleTool, "ToolMessageChunk": domain.RoleTool,
	"FunctionMessage": domain.RoleTool, "FunctionMessageChunk": domain.RoleTool,
	"ChatMessage": "", "ChatMessageChunk": "",
}

// messagesToSteps decodes a JSON value holding chat messages in any of the
// dialects the tracing tools record: a list of messages; {messages: [...]}
// (a list of lists is flattened, as LangChain batches it); OpenAI chat
// messages with tool_calls and the tool role; Anthropic content blocks;
// OpenAI Responses items; OTel GenAI messages with parts; LangChain
// serialized ({lc, kwargs}) and dict ({type, content} or {type, data})
// messages. Values that are not recognisably messages yield no steps: they
// are recorded on the span but never guessed into the conversation.
func messagesToSteps(v any) []domain.Step {
	switch x := v.(type) {
	case []any:
		var out []domain.Step
		for _, e := range x {
			out = append(out, messagesToSteps(e)...)
		}
		return out
	case map[string]any:
		if ms, ok := x["messages"]; ok {
			return messagesToSteps(ms)
		}
		return messageToSteps(x)
	}
	return nil
}

// messageToSteps converts one message or Responses item.
func messageToSteps(m map[string]any) []domain.Step {
	// LangChain serialized constructor: {"lc":1,"type":"constructor","id":[...,"HumanMessage"],"kwargs":{...}}
	if kw, ok := m["kwargs"].(map[string]any); ok {
		if ids, ok := m["id"].([]any); ok && len(ids) > 0 {
			cls, _ := ids[len(ids)-1].(string)
			role, known := langChainRoles[cls]
			if !known {
				return nil
			}
			return roleMessageSteps(cmp.Or(role, llmRole(anyString(kw["role"]))), kw)
		}
	}
	typ := anyString(m["type"])
	if _, hasRole := m["role"]; !hasRole {
		switch typ {
		case "function_call", "custom_tool_call", "tool_call":
			return []domain.Step{toolCallStep(firstString(m["call_id"], m["id"]), anyString(m["name"]), firstNonNil(m["arguments"], m["input"], m["args"]))}
		case "function_call_output", "custom_tool_call_output", "tool_call_output", "tool_result":
			return []domain.Step{{Role: domain.RoleTool, Content: anyContentText(firstNonNil(m["output"], m["content"])), ToolCallID: firstString(m["call_id"], m["tool_use_id"], m["id"])}}
		case "tool-call", "tool-result", "":
			// Vercel AI SDK: ai.response.toolCalls items and bare parts.
			if m["toolCallId"] == nil {
				break
			}
			if typ == "tool-result" || (typ == "" && m["toolName"] == nil) {
				return []domain.Step{vercelToolResult(m)}
			}
			return []domain.Step{vercelToolCall(m)}
		case "reasoning":
			text := anyContentText(firstNonNil(m["summary"], m["content"], m["text"]))
			if text == "" {
				return nil
			}
			return []domain.Step{reasoningStep(text)}
		}
	}
	role := llmRole(anyString(m["role"]))
	if role == "" {
		// LangChain dicts: {"type": "human", "content": ...} or {"type": "ai", "data": {...}}.
		if r := llmRole(typ); r != "" {
			if data, ok := m["data"].(map[string]any); ok {
				return roleMessageSteps(r, data)
			}
			return roleMessageSteps(r, m)
		}
		return nil
	}
	return roleMessageSteps(role, m)
}

// roleMessageSteps converts a message of a known role. An assistant message
// becomes its reasoning, then its text, then one step per tool call; a user
// message carrying tool results (Anthropic) becomes those tool steps, then
// its text.
func roleMessageSteps(role domain.Role, m map[string]any) []domain.Step {
	var reasoning, texts []string
	var calls []domain.Step
	var results []domain.Step
	addParts := func(parts []any) {
		for _, p := range parts {
			pm, ok := p.(map[string]any)
			if !ok {
				if s, ok := p.(string); ok {
					texts = append(texts, s)
				}
				continue
			}
			switch anyString(pm["type"]) {
			case "reasoning", "thinking", "redacted_thinking":
				if t := firstString(pm["thinking"], pm["content"], pm["text"]); t != "" {
					reasoning = append(reasoning, t)
				}
			case "tool_call", "tool_use", "function_call", "server_tool_use":
				// A Responses function_call part has both an item id (fc_…) and
				// the call_id its output answers: the call_id pairs them.
				calls = append(calls, toolCallStep(firstString(pm["call_id"], pm["id"]), anyString(pm["name"]), firstNonNil(pm["arguments"], pm["input"], pm["args"])))
			case "tool_call_response", "tool_result", "function_call_output":
				results = append(results, domain.Step{Role: domain.RoleTool,
					Content:    anyContentText(firstNonNil(pm["response"], pm["content"], pm["output"], pm["result"])),
					ToolCallID: firstString(pm["call_id"], pm["id"], pm["tool_use_id"], pm["tool_call_id"])})
			case "tool-call":
				calls = append(calls, vercelToolCall(pm))
			case "tool-result":
				results = append(results, vercelToolResult(pm))
			case "refusal":
				texts = append(texts, anyString(pm["refusal"]))
			case "image", "image_url", "input_image", "blob", "uri", "file", "input_file", "audio", "input_audio":
				texts = append(texts, "["+anyString(pm["type"])+"]")
			default: // text, input_text, output_text, untyped, and others' text
				if t := firstString(pm["text"], pm["content"]); t != "" {
					texts = append(texts, t)
				}
			}
		}
	}
	content := m["content"]
	if parts, ok := m["parts"].([]any); ok && content == nil {
		content = parts
	}
	switch c := content.(type) {
	case string:
		if s := unpackJSONParts(c); s != nil {
			addParts(s)
		} else if c != "" {
			texts = append(texts, c)
		}
	case []any:
		addParts(c)
	case map[string]any:
		addParts([]any{c})
	case nil:
	default:
		texts = append(texts, anyContentText(c))
	}
	if role == domain.RoleAssistant {
		if r := firstString(m["reasoning_content"], m["reasoning"]); r != "" && len(reasoning) == 0 {
			reasoning = append(reasoning, r)
		}
		calls = append(calls, openAIToolCalls(m)...)
	}

	var out []domain.Step
	for _, r := range reasoning {
		out = append(out, reasoningStep(r))
	}
	text := strings.Join(texts, "\n")
	switch role {
	case domain.RoleTool:
		s := domain.Step{Role: domain.RoleTool, Content: text,
			ToolCallID: firstString(m["tool_call_id"], m["tool_use_id"], m["id"]), ToolName: anyString(m["name"])}
		if len(results) > 0 && text == "" {
			return append(out, results...)
		}
		return append(out, s)
	case domain.RoleAssistant:
		// An assistant message with neither text nor a tool call (a
		// streamed turn whose content was not recorded, a reasoning-only
		// turn) is no step: an empty step gives a reviewer nothing to rate.
		if text != "" {
			out = append(out, domain.Step{Role: role, Content: text})
		}
		return append(out, calls...)
	default:
		out = append(out, results...)
		if text != "" || len(results) == 0 {
			out = append(out, domain.Step{Role: role, Content: text})
		}
		return out
	}
}

// outputToSteps decodes what an LLM call returned, in the shapes the
// tracing tools record: a plain string, a message (with or without role), a
// chat completion ({choices: [{message} | {text}]}), a Responses result
// ({output: [items]}), a LangChain LLMResult ({generations: [[{text,
// message}]]}), {messages: [...]}, or a list of any of these. Messages
// without a role are the assistant's.
func outputToSteps(v any) []domain.Step {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if strings.TrimSpace(x) == "" {
			return nil
		}
		return []domain.Step{{Role: domain.RoleAssistant, Content: x}}
	case []any:
		var out []domain.Step
		for _, e := range x {
			out = append(out, outputToSteps(e)...)
		}
		return out
	case map[string]any:
		if ch, ok := x["choices"].([]any); ok {
			var out []domain.Step
			for _, c := range ch {
				cm, ok := c.(map[string]any)
				if !ok {
					continue
				}
				out = append(out, outputToSteps(pickKey(cm, "message", "delta", "text"))...)
			}
			return out
		}
		if items, ok := x["output"].([]any); ok {
			return outputToSteps(items)
		}
		if gens, ok := x["generations"].([]any); ok {
			var out []domain.Step
			for _, g := range gens {
				list, ok := g.([]any)
				if !ok {
					list = []any{g}
				}
				for _, e := range list {
					em, ok := e.(map[string]any)
					if !ok {
						continue
					}
					out = append(out, outputToSteps(firstNonNil(em["message"], em["text"]))...)
				}
			}
			return out
		}
		if ms, ok := x["messages"]; ok {
			return outputToSteps(ms)
		}
		if tcs, ok := x["toolCalls"].([]any); ok {
			// Vercel AI SDK result: {text, toolCalls: [{toolCallId, toolName, args|input}]}.
			var out []domain.Step
			if r := anyString(x["reasoning"]); strings.TrimSpace(r) != "" {
				out = append(out, reasoningStep(r))
			}
			out = append(out, outputToSteps(x["text"])...)
			for _, tc := range tcs {
				if m, ok := tc.(map[string]any); ok {
					out = append(out, vercelToolCall(m))
				}
			}
			return out
		}
		if msg, ok := x["message"].(map[string]any); ok {
			return outputToSteps(msg)
		}
		if s := messageToSteps(x); s != nil {
			return s
		}
		if _, ok := x["content"]; ok {
			return roleMessageSteps(domain.RoleAssistant, x)
		}
		if t := firstString(x["text"], x["completion"], x["output"]); t != "" {
			return []domain.Step{{Role: domain.RoleAssistant, Content: t}}
		}
	}
	return nil
}

// openAIToolCalls reads tool_calls in the OpenAI ({id, function: {name,
// arguments}}), LangChain ({id, name, args}) and flat ({id, name, arguments})
// shapes, falling back to LangChain's additional_kwargs.tool_calls and the
// legacy function_call.
func openAIToolCalls(m map[string]any) []domain.Step {
	list, _ := m["tool_calls"].([]any)
	if len(list) == 0 {
		if ak, ok := m["additional_kwargs"].(map[string]any); ok {
			list, _ = ak["tool_calls"].([]any)
			if len(list) == 0 {
				if fc, ok := ak["function_call"].(map[string]any); ok {
					list = []any{fc}
				}
			}
		}
	}
	if len(list) == 0 {
		if fc, ok := m["function_call"].(map[string]any); ok {
			list = []any{fc}
		}
	}
	var out []domain.Step
	for _, e := range list {
		tc, ok := e.(map[string]any)
		if !ok {
			continue
		}
		name, args := anyString(tc["name"]), firstNonNil(tc["arguments"], tc["args"], tc["input"])
		if fn, ok := tc["function"].(map[string]any); ok {
			name, args = anyString(fn["name"]), firstNonNil(fn["arguments"], fn["args"])
		}
		out = append(out, toolCallStep(anyString(tc["id"]), name, args))
	}
	return out
}

// vercelToolCall reads a Vercel AI SDK tool call: a "tool-call" content part
// or an ai.response.toolCalls item, {toolCallId, toolName, args (v4) | input
// (v5)}; args may be a JSON string.
func vercelToolCall(m map[string]any) domain.Step {
	return toolCallStep(firstString(m["toolCallId"], m["id"]), firstString(m["toolName"], m["name"]),
		firstNonNil(m["input"], m["args"], m["arguments"]))
}

// vercelToolResult reads a Vercel AI SDK "tool-result" part: {toolCallId,
// toolName, result (v4) | output (v5: {type: "text"|"json"|"error-text"|…,
// value})}. An error output sets metadata.is_error.
func vercelToolResult(m map[string]any) domain.Step {
	out := firstNonNil(m["output"], m["result"], m["content"])
	isErr := m["isError"] == true
	if om, ok := out.(map[string]any); ok {
		if v, has := om["value"]; has && anyString(om["type"]) != "" && len(om) <= 3 {
			isErr = isErr || strings.HasPrefix(anyString(om["type"]), "error")
			out = v
		}
	}
	s := domain.Step{Role: domain.RoleTool, Content: anyContentText(out),
		ToolCallID: firstString(m["toolCallId"], m["id"]), ToolName: firstString(m["toolName"], m["name"])}
	if isErr {
		s.Metadata = map[string]any{"is_error": true}
	}
	return s
}

// toolCallStep builds an assistant tool call. Arguments recorded as a JSON
// string are decoded; arguments that are not a JSON object are kept under
// "input" so tool_input stays an object as the canonical format requires.
func toolCallStep(id, name string, args any) domain.Step {
	s := domain.Step{Role: domain.RoleAssistant, ToolName: name, ToolCallID: id}
	if name == "" {
		s.ToolName = "unknown_tool"
	}
	switch a := args.(type) {
	case nil:
		s.ToolInput = map[string]any{}
	case map[string]any:
		s.ToolInput = a
	case string:
		var obj map[string]any
		if strings.TrimSpace(a) == "" {
			s.ToolInput = map[string]any{}
		} else if decodeJSON([]byte(a), &obj) == nil && obj != nil {
			s.ToolInput = obj
		} else {
			s.ToolInput = map[string]any{"input": a}
		}
	default:
		s.ToolInput = map[string]any{"input": a}
	}
	return s
}

func reasoningStep(text string) domain.Step {
	return domain.Step{Role: domain.RoleAssistant, Content: text, Metadata: map[string]any{"reasoning": true}}
}

// unpackJSONParts recognises content that an instrumentation serialized to a
// JSON string (OpenLLMetry does this for content part lists).
func unpackJSONParts(s string) []any {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "[{") {
		return nil
	}
	var parts []any
	if decodeJSON([]byte(t), &parts) != nil {
		return nil
	}
	for _, p := range parts {
		pm, ok := p.(map[string]any)
		if !ok || anyString(pm["type"]) == "" {
			return nil
		}
	}
	return parts
}

// anyContentText renders a tool result or content value as the step's string:
// strings as they are, text parts joined, anything else as compact JSON.
func anyContentText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []any:
		var texts []string
		allText := true
		for _, p := range x {
			pm, ok := p.(map[string]any)
			t := ""
			if ok {
				t = firstString(pm["text"], pm["content"])
			} else if s, isStr := p.(string); isStr {
				t = s
			}
			if t == "" && !(ok && (pm["type"] == "text" || pm["type"] == "output_text" || pm["type"] == "summary_text")) {
				allText = false
				break
			}
			texts = append(texts, t)
		}
		if allText {
			return strings.Join(texts, "\n")
		}
	case map[string]any:
		if t, ok := x["text"].(string); ok && len(x) <= 2 {
			return t
		}
		if c, ok := x["content"]; ok && len(x) == 1 {
			return anyContentText(c)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// anyString returns v when it is a string (or a number, rendered), else "".
func anyString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return ""
}

func firstString(vs ...any) string {
	for _, v := range vs {
		if s := anyString(v); s != "" {
			return s
		}
	}
	return ""
}

func firstNonNil(vs ...any) any {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

// parseJSONString decodes s when it holds a JSON object or array (tools that
// store payloads as strings), else returns s unchanged.
func parseJSONString(s string) any {
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[' && t[0] != '"') {
		return s
	}
	var v any
	if decodeJSON([]byte(t), &v) != nil {
		return s
	}
	return v
}

// spanJSON marshals a decoded value for a Span's input/output (nil stays JSON
// null).
func spanJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
