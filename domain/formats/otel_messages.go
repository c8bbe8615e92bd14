package formats

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/criticml/critic/domain"
)

// This file reads the messages of one LLM call from a span's attributes and
// events (span events or log records joined to the span), in the
// conventions instrumentations use. The first message convention that yields
// messages wins, newest first: an instrumentation emitting both (OpenLLMetry's
// migration) records the same call twice. Span-level system instructions
// (gen_ai.system_instructions) are merged with whichever convention carries
// the messages, because instrumentations put them on the span even when the
// messages travel as events or log records.

// otelCallMessages returns the call's input and output messages, and whether
// the span is an LLM call at all. Tool and agent spans are not LLM calls:
// their messages reappear in the next LLM call's input.
func otelCallMessages(a map[string]any, events []otelEvent) (in, out []domain.Step, isLLM bool) {
	if otelIsOtherSpan(a) {
		return nil, nil, false
	}
	genAI := genAIAttrs(a, events)
	sys := genAISystem(genAI)
	withSys := func(in []domain.Step) []domain.Step {
		if len(sys) == 0 || (len(in) > 0 && in[0].Role == domain.RoleSystem) {
			return in
		}
		return append(append([]domain.Step(nil), sys...), in...)
	}
	if in, out, ok := genAIMessages(genAI); ok && len(in)+len(out) > 0 {
		return withSys(in), out, true
	}
	for _, conv := range []func(map[string]any) ([]domain.Step, []domain.Step, bool){
		openInferenceMessages, openLLMetryMessages, vercelAIMessages, langfuseMessages,
	} {
		if in, out, ok := conv(a); ok && len(in)+len(out) > 0 {
			return withSys(in), out, true
		}
	}
	if in, out, ok := genAIEventMessages(events); ok {
		return withSys(in), out, true
	}
	if !otelIsLLMSpan(a) && len(sys) == 0 {
		return nil, nil, false
	}
	// An LLM span without message attributes: OpenInference still records
	// the raw request and response.
	if s, ok := a["input.value"].(string); ok {
		in = messagesToSteps(parseJSONString(s))
	}
	if s, ok := a["output.value"].(string); ok {
		out = outputToSteps(parseJSONString(s))
	}
	return withSys(in), out, true
}

// genAIAttrs gathers the current GenAI message attributes of a call: those
// on the span, then those of its gen_ai.client.inference.operation.details
// events or log records. The Responses API instrumentation emits one such
// record for the input and another for the output, so every record counts,
// not only the first; a key already set keeps its first value.
func genAIAttrs(a map[string]any, events []otelEvent) map[string]any {
	keys := []string{"gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages"}
	out := map[string]any{}
	add := func(m map[string]any) {
		for _, k := range keys {
			if v, ok := m[k]; ok {
				if _, set := out[k]; !set {
					out[k] = v
				}
			}
		}
	}
	add(a)
	sorted := append([]otelEvent(nil), events...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	for _, e := range sorted {
		if e.Name != "gen_ai.client.inference.operation.details" {
			continue
		}
		add(e.Attrs)
		if body, ok := e.Body.(map[string]any); ok {
			add(body)
		}
	}
	return out
}

// otelIsOtherSpan recognises spans that declare themselves something other
// than an LLM call (agent, tool, chain, retrieval). GenAI agent spans may
// carry gen_ai.input.messages too, but those repeat the LLM calls' messages.
func otelIsOtherSpan(a map[string]any) bool {
	switch strings.ToLower(anyString(a["gen_ai.operation.name"])) {
	case "invoke_agent", "create_agent", "execute_tool", "embeddings", "invoke_workflow":
		return true
	}
	switch strings.ToUpper(anyString(a["openinference.span.kind"])) {
	case "AGENT", "CHAIN", "TOOL", "RETRIEVER", "EMBEDDING", "RERANKER", "GUARDRAIL", "EVALUATOR":
		return true
	}
	switch strings.ToLower(anyString(a["traceloop.span.kind"])) {
	case "workflow", "task", "agent", "tool":
		return true
	}
	switch strings.ToLower(anyString(a["langfuse.observation.type"])) {
	case "span", "agent", "tool", "chain", "retriever", "evaluator", "embedding", "guardrail", "event":
		return true
	}
	return false
}

// otelIsLLMSpan recognises an LLM call by its declared kind.
func otelIsLLMSpan(a map[string]any) bool {
	switch strings.ToLower(anyString(a["gen_ai.operation.name"])) {
	case "chat", "text_completion", "generate_content", "completion":
		return true
	}
	return strings.EqualFold(anyString(a["openinference.span.kind"]), "LLM") ||
		strings.EqualFold(anyString(a["langfuse.observation.type"]), "generation") ||
		strings.EqualFold(anyString(a["traceloop.span.kind"]), "llm") ||
		strings.EqualFold(anyString(a["langsmith.span.kind"]), "llm")
}

// langfuseMessages reads Langfuse's OTel SDK attributes: a generation
// observation (langfuse.observation.type "generation") records the messages
// it was sent as langfuse.observation.input and its completion as
// langfuse.observation.output, both JSON strings in any chat dialect; a plain
// string input is the user's prompt.
func langfuseMessages(a map[string]any) (in, out []domain.Step, ok bool) {
	if !strings.EqualFold(anyString(a["langfuse.observation.type"]), "generation") {
		return nil, nil, false
	}
	switch v := decodeAttrJSON(a["langfuse.observation.input"]).(type) {
	case string:
		if strings.TrimSpace(v) != "" {
			in = []domain.Step{{Role: domain.RoleUser, Content: v}}
		}
	default:
		in = messagesToSteps(v)
	}
	out = outputToSteps(decodeAttrJSON(a["langfuse.observation.output"]))
	return in, out, true
}

// genAISystem reads gen_ai.system_instructions (a string, a list of parts
// or one part, as JSON or structured AnyValues) as system steps.
func genAISystem(a map[string]any) []domain.Step {
	switch s := decodeAttrJSON(a["gen_ai.system_instructions"]).(type) {
	case string:
		if strings.TrimSpace(s) != "" {
			return []domain.Step{{Role: domain.RoleSystem, Content: s}}
		}
	case []any:
		return roleMessageSteps(domain.RoleSystem, map[string]any{"content": s})
	case map[string]any:
		return roleMessageSteps(domain.RoleSystem, map[string]any{"content": []any{s}})
	}
	return nil
}

func decodeAttrJSON(v any) any {
	if s, isStr := v.(string); isStr {
		return parseJSONString(s)
	}
	return v
}

// genAIMessages reads the current OTel GenAI message attributes
// (gen_ai.input.messages, gen_ai.output.messages), each JSON as a string or
// structured AnyValue arrays. The system instructions are not included:
// otelCallMessages merges them.
func genAIMessages(a map[string]any) (in, out []domain.Step, ok bool) {
	inp, hasIn := a["gen_ai.input.messages"]
	outp, hasOut := a["gen_ai.output.messages"]
	if !hasIn && !hasOut {
		return nil, nil, false
	}
	switch v := decodeAttrJSON(inp).(type) {
	case string:
		if v != "" {
			in = append(in, domain.Step{Role: domain.RoleUser, Content: v})
		}
	default:
		in = append(in, messagesToSteps(v)...)
	}
	out = outputToSteps(decodeAttrJSON(outp))
	return in, out, true
}

// openInferenceMessages reads llm.input_messages.N.message.* and
// llm.output_messages.N.message.* by rebuilding each message as an OpenAI
// chat message.
func openInferenceMessages(a map[string]any) (in, out []domain.Step, ok bool) {
	inTree := unflattenAttrs(a, "llm.input_messages.")
	outTree := unflattenAttrs(a, "llm.output_messages.")
	if len(inTree) == 0 && len(outTree) == 0 {
		return nil, nil, false
	}
	conv := func(tree map[string]any, defRole string) []domain.Step {
		var steps []domain.Step
		for _, node := range indexedChildren(tree) {
			msg, _ := node["message"].(map[string]any)
			if msg == nil {
				continue
			}
			m := map[string]any{"role": firstString(msg["role"], defRole), "content": msg["content"],
				"tool_call_id": msg["tool_call_id"], "name": msg["name"]}
			if contents, ok := msg["contents"].(map[string]any); ok && msg["content"] == nil {
				var parts []any
				for _, c := range indexedChildren(contents) {
					mc, _ := c["message_content"].(map[string]any)
					if mc == nil {
						continue
					}
					typ := firstString(mc["type"], "text")
					if typ == "image" {
						parts = append(parts, map[string]any{"type": "image"})
						continue
					}
					parts = append(parts, map[string]any{"type": typ, "text": mc["text"]})
				}
				m["content"] = parts
			}
			if tcs, ok := msg["tool_calls"].(map[string]any); ok {
				var list []any
				for _, tc := range indexedChildren(tcs) {
					c, _ := tc["tool_call"].(map[string]any)
					if c == nil {
						continue
					}
					fn, _ := c["function"].(map[string]any)
					list = append(list, map[string]any{"id": c["id"], "function": map[string]any{
						"name": pickKey(fn, "name"), "arguments": pickKey(fn, "arguments")}})
				}
				m["tool_calls"] = list
			}
			steps = append(steps, messageToSteps(m)...)
		}
		return steps
	}
	return conv(inTree, "user"), conv(outTree, "assistant"), true
}

// openLLMetryMessages reads Traceloop's gen_ai.prompt.N.* and
// gen_ai.completion.N.* (and the older llm.prompts/llm.completions).
func openLLMetryMessages(a map[string]any) (in, out []domain.Step, ok bool) {
	inTree := unflattenAttrs(a, "gen_ai.prompt.")
	outTree := unflattenAttrs(a, "gen_ai.completion.")
	if len(inTree) == 0 && len(outTree) == 0 {
		inTree, outTree = unflattenAttrs(a, "llm.prompts."), unflattenAttrs(a, "llm.completions.")
	}
	if len(inTree) == 0 && len(outTree) == 0 {
		return nil, nil, false
	}
	conv := func(tree map[string]any, defRole string) []domain.Step {
		var steps []domain.Step
		for _, node := range indexedChildren(tree) {
			m := map[string]any{"role": firstString(node["role"], defRole), "content": node["content"],
				"tool_call_id": node["tool_call_id"], "name": node["name"], "function_call": node["function_call"]}
			if tcs, ok := node["tool_calls"].(map[string]any); ok {
				var list []any
				for _, tc := range indexedChildren(tcs) {
					list = append(list, map[string]any{"id": tc["id"], "name": tc["name"], "arguments": tc["arguments"]})
				}
				m["tool_calls"] = list
			}
			steps = append(steps, messageToSteps(m)...)
		}
		return steps
	}
	return conv(inTree, "user"), conv(outTree, "assistant"), true
}

// vercelAIMessages reads the Vercel AI SDK's own attributes, recorded on its
// provider-call spans (ai.generateText.doGenerate, ai.streamText.doStream,
// ai.generateObject.doGenerate, …): ai.prompt.messages is the input (AI SDK
// messages with text, tool-call and tool-result parts), ai.response.reasoning,
// ai.response.text (or ai.response.object) and ai.response.toolCalls the
// output. The outer ai.generateText / ai.streamText spans only hold ai.prompt
// and the final answer of a multi-step run, which the provider calls already
// recorded, so they are not read.
func vercelAIMessages(a map[string]any) (in, out []domain.Step, ok bool) {
	msgs, has := a["ai.prompt.messages"]
	if !has {
		return nil, nil, false
	}
	in = messagesToSteps(decodeAttrJSON(msgs))
	if r := anyString(a["ai.response.reasoning"]); strings.TrimSpace(r) != "" {
		out = append(out, reasoningStep(r))
	}
	text := firstString(a["ai.response.text"], a["ai.response.object"])
	if strings.TrimSpace(text) != "" {
		out = append(out, domain.Step{Role: domain.RoleAssistant, Content: text})
	}
	if calls, isList := decodeAttrJSON(a["ai.response.toolCalls"]).([]any); isList {
		for _, c := range calls {
			if cm, isMap := c.(map[string]any); isMap {
				out = append(out, vercelToolCall(cm))
			}
		}
	}
	return in, out, true
}

// genAIEventRoles are the roles of the deprecated per-message events.
var genAIEventRoles = map[string]string{"gen_ai.system.message": "system", "gen_ai.user.message": "user",
	"gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool", "gen_ai.choice": "choice"}

// genAIEventMessages reads the deprecated per-message events (span events or
// log records): gen_ai.{system,user,assistant,tool}.message are the input,
// gen_ai.choice the output.
func genAIEventMessages(events []otelEvent) (in, out []domain.Step, ok bool) {
	for _, e := range orderGenAIEvents(events) {
		role, known := genAIEventRoles[e.Name]
		if !known {
			continue
		}
		ok = true
		body := e.Body
		if body == nil {
			body = map[string]any{"content": e.Attrs["content"]}
		}
		m := map[string]any{}
		switch b := body.(type) {
		case map[string]any:
			maps.Copy(m, b)
		case string:
			m["content"] = b
		default:
			m["content"] = anyContentText(b)
		}
		if role == "choice" {
			if msg, isMap := m["message"].(map[string]any); isMap {
				m = maps.Clone(msg)
			}
			if anyString(m["role"]) == "" {
				m["role"] = "assistant"
			}
			out = append(out, messageToSteps(m)...)
			continue
		}
		if r := anyString(e.Attrs["gen_ai.message.role"]); role != "tool" && r != "" {
			role = r
		}
		m["role"] = role
		if role == "tool" && m["tool_call_id"] == nil {
			m["tool_call_id"] = m["id"]
		}
		in = append(in, messageToSteps(m)...)
	}
	return in, out, ok
}

// unflattenAttrs turns the attributes under prefix ("x.0.message.role") into a
// tree keyed by path segment. Segments are split on every dot, which is
// unambiguous for the flattened conventions (their names never contain
// indices with dots inside a value's key).
func unflattenAttrs(a map[string]any, prefix string) map[string]any {
	tree := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(a)) {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		parts := strings.Split(rest, ".")
		node := tree
		for i, p := range parts {
			if i == len(parts)-1 {
				if _, exists := node[p].(map[string]any); !exists {
					node[p] = a[k]
				}
				break
			}
			child, ok := node[p].(map[string]any)
			if !ok {
				child = map[string]any{}
				node[p] = child
			}
			node = child
		}
	}
	return tree
}

// indexedChildren returns the children of tree whose keys are indices, in index order.
func indexedChildren(tree map[string]any) []map[string]any {
	type kv struct {
		i int
		m map[string]any
	}
	var list []kv
	for k, v := range tree {
		i, err := strconv.Atoi(k)
		m, ok := v.(map[string]any)
		if err != nil || !ok || i < 0 {
			continue
		}
		list = append(list, kv{i, m})
	}
	sort.Slice(list, func(a, b int) bool { return list[a].i < list[b].i })
	out := make([]map[string]any, len(list))
	for i, e := range list {
		out[i] = e.m
	}
	return out
}
