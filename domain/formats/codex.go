package formats

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/criticml/critic/domain"
)

// Codex reads a Codex CLI rollout (~/.codex/sessions/**/rollout-*.jsonl): one
// trace per payload.
//
// Two layouts exist. Current rollouts wrap every line as
// {"timestamp", "type", "payload"} with type session_meta, response_item,
// event_msg, turn_context or compacted. Older rollouts (mid 2025) open with a
// bare header {"id", "timestamp", "instructions", "git"?} followed by bare
// response items and {"record_type": "state"} markers.
//
// Mapping choices:
//   - response_item messages: user → user, assistant → assistant, developer
//     and system → system (metadata.original_role = "developer"). A user
//     message that is harness context, not typed by the person
//     (<environment_context>, <user_instructions>, AGENTS.md instructions,
//     <permissions instructions>, <turn_aborted>), becomes a system step with
//     metadata.original_role = "user", so user steps are what the person said.
//   - function_call, custom_tool_call, local_shell_call, web_search_call and
//     any later *_call item become an assistant tool-call step: tool_name is
//     the item's name (else the type without "_call", e.g. "local_shell"),
//     tool_input the parsed arguments (non-object arguments kept as
//     {"_raw": …}), a custom tool's free-form input as {"input": "<text>"},
//     or the item's action object; tool_call_id is call_id.
//   - *_call_output items become tool steps. An output that is JSON
//     {"output": …, "metadata": …} (Codex's exec tool) is unwrapped: the
//     content is the output and the metadata is kept as
//     metadata.output_metadata; {"content", "success": false} sets
//     metadata.is_error; content-item arrays are joined, images as "[image]".
//   - reasoning items become assistant steps with metadata.thinking = true
//     (summary text, else readable reasoning content); encrypted-only
//     reasoning adds nothing.
//   - an output whose call is not in the file (a rollout cut at the head)
//     keeps its content; its id moves to metadata.unmatched_tool_call_id.
//   - compacted records become a system step holding the summary, with
//     metadata.compacted = true: it is what the model saw from then on.
//   - event_msg user_message / agent_message repeat the response items and are
//     skipped, unless the rollout has no response_item message at all (some
//     versions log only events); then they are the user and assistant steps.
//   - session_meta gives ExternalID (payload.id), metadata cwd, originator,
//     version (cli_version), model_provider, git_branch, git_commit,
//     git_repository and instructions (the session's user instructions,
//     kept as metadata rather than a step because newer rollouts repeat them
//     as a <user_instructions> message); turn_context gives metadata.model.
//   - session_meta.base_instructions (Codex ≥ 0.171: {"text": …}, or a
//     string) is the model's system prompt: it becomes the trace's first
//     step, a system step with metadata.base_instructions = true.
//
// Every step recorded with a timestamp has metadata.timestamp.
type Codex struct{}

func (Codex) Name() string { return "codex" }
func (Codex) Description() string {
	return "Codex CLI rollout JSONL (~/.codex/sessions/**/rollout-*.jsonl); one trace per file."
}

var codexEnvelopeTypes = map[string]bool{
	"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true,
}

var codexItemTypes = map[string]bool{
	"message": true, "reasoning": true, "function_call": true, "function_call_output": true,
	"custom_tool_call": true, "custom_tool_call_output": true, "local_shell_call": true,
	"web_search_call": true,
}

// Detect: the first line is a {"type", "payload"} envelope of a Codex type,
// or the old bare header: {"id", "timestamp"} with no "type", and either a
// Codex header key (instructions, git, cli_version, originator) or a second
// line that is a state marker or a bare response item.
func (Codex) Detect(data []byte) bool {
	var first, second map[string]json.RawMessage
	n := 0
	_ = eachLine(data, func(_ int, raw []byte) error {
		n++
		var m map[string]json.RawMessage
		if firstJSONByte(raw) != '{' || json.Unmarshal(raw, &m) != nil {
			return errStopScan
		}
		if n == 1 {
			first = m
			return nil
		}
		second = m
		return errStopScan
	})
	if first == nil {
		return false
	}
	typ, _ := asJSONString(first["type"])
	if _, ok := first["payload"]; ok && codexEnvelopeTypes[typ] {
		return true
	}
	if _, hasType := first["type"]; hasType {
		return false
	}
	for _, k := range []string{"messages", "steps", "sessionId", "observations", "role"} {
		if _, ok := first[k]; ok {
			return false
		}
	}
	if _, ok := asJSONString(first["id"]); !ok || first["timestamp"] == nil {
		return false
	}
	for _, k := range []string{"instructions", "git", "cli_version", "originator"} {
		if _, ok := first[k]; ok {
			return true
		}
	}
	if second == nil {
		return false
	}
	if _, ok := second["record_type"]; ok {
		return true
	}
	t2, _ := asJSONString(second["type"])
	return codexItemTypes[t2]
}

type codexItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Summary   json.RawMessage `json:"summary"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Action    json.RawMessage `json:"action"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Message   json.RawMessage `json:"message"`
}

type codexParser struct {
	t         domain.Trace
	meta      map[string]any
	stepLines []int
	fromEvent []bool // step came from an event_msg (fallback only)
	names     map[string]string
	hasItems  bool // some response_item message was seen
}

func (Codex) Parse(data []byte) ([]domain.Trace, error) {
	p := &codexParser{
		t:     domain.Trace{Steps: []domain.Step{}, SessionSync: true},
		meta:  map[string]any{"agent": "codex"},
		names: map[string]string{},
	}
	first := true
	err := eachLine(data, func(line int, raw []byte) error {
		isFirst := first
		first = false
		if firstJSONByte(raw) != '{' {
			return domain.InvalidAt(line, "", "expected a JSON object")
		}
		var rec map[string]json.RawMessage
		if err := decodeJSON(raw, &rec); err != nil {
			return err
		}
		stamp, err := normalizeTimestamp(rec["timestamp"])
		if err != nil {
			return domain.InvalidAt(line, "timestamp", "%v", err)
		}
		typ, _ := asJSONString(rec["type"])
		payload, hasPayload := rec["payload"]
		switch {
		case hasPayload && codexEnvelopeTypes[typ]:
			return p.envelope(line, typ, payload, stamp)
		case rec["record_type"] != nil:
			return nil
		case isFirst && rec["type"] == nil && rec["id"] != nil:
			return p.sessionMeta(line, raw, "", stamp)
		default:
			if !codexItemTypes[typ] && !strings.HasSuffix(typ, "_call") && !strings.HasSuffix(typ, "_call_output") {
				return nil // ghost_snapshot and other bookkeeping items
			}
			return p.item(line, raw, stamp, "")
		}
	})
	if err != nil {
		return nil, err
	}
	t := p.t
	steps, lines := t.Steps[:0], []int{}
	for i, s := range p.t.Steps {
		// Without response items only event_msg messages carry the
		// conversation: they are kept.
		if p.fromEvent[i] && p.hasItems {
			continue
		}
		steps = append(steps, s)
		lines = append(lines, p.stepLines[i])
	}
	t.Steps, t.Metadata = finishSteps(steps), p.meta
	if err := validateSession(t, lines); err != nil {
		return nil, err
	}
	return []domain.Trace{t}, nil
}

func (p *codexParser) envelope(line int, typ string, payload json.RawMessage, stamp string) error {
	if firstJSONByte(payload) != '{' {
		if typ == "session_meta" || typ == "response_item" {
			return domain.InvalidAt(line, "payload", "payload must be a JSON object")
		}
		return nil
	}
	switch typ {
	case "session_meta":
		return p.sessionMeta(line, payload, "payload.", stamp)
	case "response_item":
		return p.item(line, payload, stamp, "payload.")
	case "turn_context":
		var tc struct {
			Model json.RawMessage `json:"model"`
		}
		if json.Unmarshal(payload, &tc) == nil {
			if m, ok := asJSONString(tc.Model); ok && p.meta["model"] == nil {
				putString(p.meta, "model", m)
			}
		}
	case "compacted":
		var c struct {
			Message json.RawMessage `json:"message"`
		}
		if json.Unmarshal(payload, &c) == nil {
			if s, ok := asJSONString(c.Message); ok && strings.TrimSpace(s) != "" {
				p.add(line, stamp, false, domain.Step{Role: domain.RoleSystem, Content: s, Metadata: map[string]any{"compacted": true}})
			}
		}
	case "event_msg":
		var ev struct {
			Type    json.RawMessage `json:"type"`
			Message json.RawMessage `json:"message"`
		}
		if json.Unmarshal(payload, &ev) != nil {
			return nil
		}
		et, _ := asJSONString(ev.Type)
		msg, _ := asJSONString(ev.Message)
		switch et {
		case "user_message":
			if msg != "" {
				p.add(line, stamp, true, codexUserStep(msg))
			}
		case "agent_message":
			if msg != "" {
				p.add(line, stamp, true, domain.Step{Role: domain.RoleAssistant, Content: msg})
			}
		}
	}
	return nil
}

// sessionMeta reads the session header (the first session_meta wins: forked
// rollouts may repeat their parent's).
func (p *codexParser) sessionMeta(line int, raw json.RawMessage, prefix, stamp string) error {
	var sm struct {
		ID            json.RawMessage `json:"id"`
		SessionID     json.RawMessage `json:"session_id"`
		Cwd           json.RawMessage `json:"cwd"`
		Originator    json.RawMessage `json:"originator"`
		CLIVersion    json.RawMessage `json:"cli_version"`
		ModelProvider json.RawMessage `json:"model_provider"`
		Instructions  json.RawMessage `json:"instructions"`
		// BaseInstructions (Codex ≥ 0.171) is the model's system prompt,
		// {"text": …} or a string.
		BaseInstructions json.RawMessage `json:"base_instructions"`
		Git              json.RawMessage `json:"git"`
		HistoryBase      json.RawMessage `json:"history_base"`
	}
	if err := decodeJSON(raw, &sm); err != nil {
		return domain.InvalidAt(line, strings.TrimSuffix(prefix, "."), "%v", err)
	}
	if p.t.ExternalID != "" {
		return nil
	}
	if len(sm.HistoryBase) > 0 && string(sm.HistoryBase) != "null" {
		// A paginated page (Codex ≥ 0.154 forks and reverts) holds only its
		// own records; the conversation before them lives in the rollout
		// history_base names. Storing the page alone would store half a
		// conversation, so it is refused (spec 001: unresolved pages).
		var hb struct {
			ThreadID string `json:"thread_id"`
		}
		_ = json.Unmarshal(sm.HistoryBase, &hb)
		return domain.InvalidAt(line, prefix+"history_base",
			"this Codex rollout page continues rollout %q and holds only its own records; upload it with `critic sessions sync`, which rebuilds the page from its base", hb.ThreadID)
	}
	id, ok := asJSONString(sm.ID)
	if !ok || id == "" {
		id, _ = asJSONString(sm.SessionID)
	}
	p.t.ExternalID = id
	base, ok := asJSONString(sm.BaseInstructions)
	if !ok && firstJSONByte(sm.BaseInstructions) == '{' {
		var bi struct {
			Text json.RawMessage `json:"text"`
		}
		if json.Unmarshal(sm.BaseInstructions, &bi) == nil {
			base, _ = asJSONString(bi.Text)
		}
	}
	if strings.TrimSpace(base) != "" {
		p.add(line, stamp, false, domain.Step{Role: domain.RoleSystem, Content: base, Metadata: map[string]any{"base_instructions": true}})
	}
	var git struct {
		Branch json.RawMessage `json:"branch"`
		Commit json.RawMessage `json:"commit_hash"`
		Repo   json.RawMessage `json:"repository_url"`
	}
	if firstJSONByte(sm.Git) == '{' {
		_ = json.Unmarshal(sm.Git, &git) // raw fields: an object sm decoded always decodes
	}
	for key, v := range map[string]json.RawMessage{
		"cwd": sm.Cwd, "originator": sm.Originator, "version": sm.CLIVersion,
		"model_provider": sm.ModelProvider, "instructions": sm.Instructions,
		"git_branch": git.Branch, "git_commit": git.Commit, "git_repository": git.Repo,
	} {
		s, _ := asJSONString(v) // "" when not a string
		putString(p.meta, key, s)
	}
	return nil
}

// item converts one response item. prefix is "payload." for wrapped items.
func (p *codexParser) item(line int, raw json.RawMessage, stamp, prefix string) error {
	var it codexItem
	if err := decodeJSON(raw, &it); err != nil {
		return domain.InvalidAt(line, strings.TrimSuffix(prefix, "."), "%v", err)
	}
	switch {
	case it.Type == "message":
		text, err := codexText(it.Content, prefix+"content")
		if err != nil {
			return domain.AtLine(err, line)
		}
		var st domain.Step
		switch it.Role {
		case "user":
			st = codexUserStep(text)
		case "assistant":
			st = domain.Step{Role: domain.RoleAssistant, Content: text}
		case "developer", "system":
			st = domain.Step{Role: domain.RoleSystem, Content: text}
			if it.Role == "developer" {
				setStepMeta(&st, "original_role", "developer")
			}
		default:
			return domain.InvalidAt(line, prefix+"role", "unknown role %q (expected user, assistant, developer or system)", it.Role)
		}
		p.hasItems = true
		if text != "" {
			p.add(line, stamp, false, st)
		}
	case it.Type == "reasoning":
		text, _ := codexText(it.Summary, prefix+"summary")
		if strings.TrimSpace(text) == "" {
			text, _ = codexText(it.Content, prefix+"content")
		}
		if strings.TrimSpace(text) != "" {
			p.add(line, stamp, false, domain.Step{Role: domain.RoleAssistant, Content: text, Metadata: map[string]any{"thinking": true}})
		}
	case strings.HasSuffix(it.Type, "_call_output"):
		st := domain.Step{Role: domain.RoleTool, ToolCallID: it.CallID, ToolName: p.names[it.CallID]}
		if err := codexOutput(&st, it.Output, prefix+"output"); err != nil {
			return domain.AtLine(err, line)
		}
		p.add(line, stamp, false, st)
	case strings.HasSuffix(it.Type, "_call"):
		st := domain.Step{Role: domain.RoleAssistant, ToolName: cmp.Or(it.Name, strings.TrimSuffix(it.Type, "_call")), ToolCallID: it.CallID}
		switch {
		case !isJSONNull(it.Arguments):
			st.ToolInput = toolArguments(it.Arguments)
		case !isJSONNull(it.Input):
			if s, ok := asJSONString(it.Input); ok {
				st.ToolInput = map[string]any{"input": s}
			} else {
				st.ToolInput = toolArguments(it.Input)
			}
		case !isJSONNull(it.Action):
			st.ToolInput = toolArguments(it.Action)
		}
		if it.Namespace != "" {
			setStepMeta(&st, "namespace", it.Namespace)
		}
		if it.CallID != "" {
			p.names[it.CallID] = st.ToolName
		}
		p.add(line, stamp, false, st)
	}
	return nil
}

func (p *codexParser) add(line int, stamp string, fromEvent bool, st domain.Step) {
	if stamp != "" {
		setStepMeta(&st, "timestamp", stamp)
	}
	p.t.Steps = append(p.t.Steps, st)
	p.stepLines = append(p.stepLines, line)
	p.fromEvent = append(p.fromEvent, fromEvent)
}

// codexContextTags open the user messages Codex injects itself.
var codexContextTags = []string{
	"<environment_context>", "<user_instructions>", "<INSTRUCTIONS>", "# AGENTS.md instructions",
	"<permissions instructions>", "<turn_aborted>",
}

func codexUserStep(text string) domain.Step {
	trimmed := strings.TrimSpace(text)
	for _, tag := range codexContextTags {
		if strings.HasPrefix(trimmed, tag) {
			return domain.Step{Role: domain.RoleSystem, Content: text, Metadata: map[string]any{"original_role": "user"}}
		}
	}
	return domain.Step{Role: domain.RoleUser, Content: text}
}

// codexText flattens message content or reasoning summaries: a string, or an
// array of {type, text} items (input_text, output_text, summary_text,
// reasoning_text) joined with "\n"; images become "[image]".
func codexText(raw json.RawMessage, field string) (string, error) {
	return joinContent(raw, field, "content must be a string or an array of content items", codexItemText)
}

// codexItemText is the text of one content item.
func codexItemText(field string, j int, raw json.RawMessage) (string, error) {
	var c struct {
		Type json.RawMessage `json:"type"`
		Text json.RawMessage `json:"text"`
	}
	if firstJSONByte(raw) != '{' || json.Unmarshal(raw, &c) != nil {
		return "", domain.InvalidAt(0, fmt.Sprintf("%s[%d]", field, j), "a content item must be a JSON object")
	}
	if s, ok := asJSONString(c.Text); ok && s != "" {
		return s, nil
	}
	if typ, _ := asJSONString(c.Type); typ == "input_image" || typ == "image" {
		return imagePlaceholder, nil
	}
	return "", nil
}

// codexOutput fills a tool step from a call output: a string (possibly the
// exec tool's JSON {"output", "metadata"}), an array of content items, or an
// object {"content" | "output", "success"?, "metadata"?}.
func codexOutput(st *domain.Step, raw json.RawMessage, field string) error {
	if isJSONNull(raw) {
		return nil
	}
	obj := raw
	if s, ok := asJSONString(raw); ok {
		st.Content = s
		if firstJSONByte([]byte(s)) != '{' {
			return nil
		}
		obj = json.RawMessage(s)
	} else if firstJSONByte(raw) == '[' {
		text, err := codexText(raw, field)
		st.Content = text
		return err
	} else if firstJSONByte(raw) != '{' {
		st.Content = strings.TrimSpace(string(raw))
		return nil
	}
	var o struct {
		Output   json.RawMessage `json:"output"`
		Content  json.RawMessage `json:"content"`
		Success  json.RawMessage `json:"success"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if json.Unmarshal(obj, &o) != nil {
		st.Content = cmp.Or(st.Content, strings.TrimSpace(string(raw)))
		return nil
	}
	text, ok := asJSONString(o.Output)
	if !ok {
		text, ok = asJSONString(o.Content)
	}
	if !ok { // an object of some other shape: keep it as JSON
		st.Content = cmp.Or(st.Content, strings.TrimSpace(string(raw)))
		return nil
	}
	st.Content = text
	if m, ok := decodeObject(o.Metadata); ok {
		setStepMeta(st, "output_metadata", m)
	}
	if strings.TrimSpace(string(o.Success)) == "false" {
		setStepMeta(st, "is_error", true)
	}
	return nil
}
