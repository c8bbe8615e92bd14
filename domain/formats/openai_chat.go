package formats

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/criticml/critic/domain"
)

// OpenAIChat reads OpenAI chat conversations: JSONL with one
// {"messages": [...], "id"?, "title"?, "metadata"?} per line (the fine-tuning
// format), or a single JSON array of messages, which is one trace.
//
// Mapping choices:
//   - developer becomes system and function becomes tool; both keep
//     metadata.original_role so the source role is not lost.
//   - An assistant message with text and tool_calls becomes a text step
//     followed by one assistant step per call (content ""), the same order
//     anthropic_messages gives text and tool_use blocks.
//   - Call arguments (a JSON string) are parsed into tool_input; arguments
//     that are not a JSON object are kept as {"_raw": "<string>"}.
//   - Legacy function_call has no id, so each gets a synthetic tool_call_id
//     "function_call_<message index>"; the next role:"function" message with
//     the same name (else the oldest unanswered call) is paired with it.
//   - Content parts: text joined with "\n", images as "[image]", audio and
//     files as "[audio]" / "[file]", refusal parts as their text.
//   - A message "timestamp" or "created_at" (ISO 8601 or Unix seconds) becomes
//     metadata.timestamp in RFC 3339; untimed messages stay untimed.
//   - A message "name" is kept as metadata.name; an assistant refusal with no
//     content becomes the content with metadata.refusal = true.
type OpenAIChat struct{}

func (OpenAIChat) Name() string { return "openai_chat" }
func (OpenAIChat) Description() string {
	return `OpenAI chat JSONL: one {"messages": [...]} per line (fine-tuning format), or one JSON array of messages; handles tool_calls and role "tool".`
}

// Detect: the first line is an object with a "messages" array of role objects
// (or the payload is an array of role objects) and nothing Anthropic-only
// appears in the first lines; see classifyChat.
func (OpenAIChat) Detect(data []byte) bool { return classifyChat(data) == chatOpenAI }

type openAIMessage struct {
	Role         string            `json:"role"`
	Content      json.RawMessage   `json:"content"`
	Name         string            `json:"name"`
	ToolCalls    []json.RawMessage `json:"tool_calls"`
	ToolCallID   string            `json:"tool_call_id"`
	FunctionCall *openAIFunction   `json:"function_call"`
	Refusal      json.RawMessage   `json:"refusal"`
	Timestamp    json.RawMessage   `json:"timestamp"`
	CreatedAt    json.RawMessage   `json:"created_at"`
}

type openAIFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type openAIToolCall struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Function *openAIFunction `json:"function"`
	Custom   *struct {
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"custom"`
}

func (OpenAIChat) Parse(data []byte) ([]domain.Trace, error) {
	if firstJSONByte(data) == '[' {
		var msgs []json.RawMessage
		if err := decodeJSON(data, &msgs); err != nil {
			return nil, err
		}
		t, err := openAITrace(msgs)
		if err != nil {
			return nil, err
		}
		if err := domain.ValidateTrace(t, 0); err != nil {
			return nil, err
		}
		return []domain.Trace{t}, nil
	}
	return objectLines(data, "messages", validated(func(_ int, raw []byte) (domain.Trace, error) {
		var rec struct {
			traceHeader
			Messages json.RawMessage `json:"messages"`
		}
		if err := decodeJSON(raw, &rec); err != nil {
			return domain.Trace{}, err
		}
		msgs, err := jsonArray(rec.Messages, "messages", `missing "messages" array`)
		if err != nil {
			return domain.Trace{}, err
		}
		t, err := openAITrace(msgs)
		if err != nil {
			return t, err
		}
		return t, rec.traceHeader.apply(&t)
	}))
}

// openAITrace converts one conversation. Errors carry line 0; the caller's
// eachLine stamps the line.
func openAITrace(msgs []json.RawMessage) (domain.Trace, error) {
	t := domain.Trace{Steps: []domain.Step{}}
	names := map[string]string{} // tool_call_id -> function name
	type pending struct{ id, name string }
	var legacy []pending // legacy function_calls not yet answered
	for i, raw := range msgs {
		field := fmt.Sprintf("messages[%d]", i)
		var m openAIMessage
		if err := decodeObjectAt(raw, field, "a message must be a JSON object", &m); err != nil {
			return t, err
		}
		content, err := joinContent(m.Content, field+".content", "content must be a string, null or an array of content parts", openAIPartText)
		if err != nil {
			return t, err
		}
		meta := map[string]any{}
		stamp, err := messageStamp(m.Timestamp, m.CreatedAt, field)
		if err != nil {
			return t, err
		}
		putString(meta, "timestamp", stamp)
		if m.Name != "" && m.Role != "tool" && m.Role != "function" {
			meta["name"] = m.Name
		}
		step := func(role domain.Role, content string) domain.Step {
			s := domain.Step{Role: role, Content: content}
			for k, v := range meta {
				setStepMeta(&s, k, v)
			}
			return s
		}
		switch m.Role {
		case "system", "developer", "user":
			role := domain.RoleUser
			if m.Role != "user" {
				role = domain.RoleSystem
			}
			s := step(role, content)
			if m.Role == "developer" {
				setStepMeta(&s, "original_role", "developer")
			}
			t.Steps = append(t.Steps, s)
		case "assistant":
			if content == "" {
				if r, ok := asJSONString(m.Refusal); ok && r != "" {
					content = r
					meta["refusal"] = true
				}
			}
			hasCalls := len(m.ToolCalls) > 0 || m.FunctionCall != nil
			if content != "" || !hasCalls {
				t.Steps = append(t.Steps, step(domain.RoleAssistant, content))
			}
			for j, rc := range m.ToolCalls {
				cf := fmt.Sprintf("%s.tool_calls[%d]", field, j)
				var tc openAIToolCall
				if err := decodeObjectAt(rc, cf, "a tool call must be a JSON object", &tc); err != nil {
					return t, err
				}
				s := step(domain.RoleAssistant, "")
				s.ToolCallID = tc.ID
				switch {
				case tc.Function != nil:
					s.ToolName = tc.Function.Name
					s.ToolInput = toolArguments(tc.Function.Arguments)
				case tc.Custom != nil:
					s.ToolName = tc.Custom.Name
					if in, ok := asJSONString(tc.Custom.Input); ok {
						s.ToolInput = map[string]any{"input": in}
					} else {
						s.ToolInput = toolArguments(tc.Custom.Input)
					}
				default:
					return t, domain.InvalidAt(0, cf+".function", "a tool call needs a function")
				}
				if s.ToolName == "" {
					return t, domain.InvalidAt(0, cf+".function.name", "a tool call needs a name")
				}
				if tc.ID != "" {
					names[tc.ID] = s.ToolName
				}
				t.Steps = append(t.Steps, s)
			}
			if fc := m.FunctionCall; fc != nil {
				if fc.Name == "" {
					return t, domain.InvalidAt(0, field+".function_call.name", "a function call needs a name")
				}
				s := step(domain.RoleAssistant, "")
				s.ToolName = fc.Name
				s.ToolInput = toolArguments(fc.Arguments)
				s.ToolCallID = fmt.Sprintf("function_call_%d", i)
				legacy = append(legacy, pending{s.ToolCallID, fc.Name})
				t.Steps = append(t.Steps, s)
			}
		case "tool":
			s := step(domain.RoleTool, content)
			s.ToolCallID = m.ToolCallID
			s.ToolName = cmp.Or(m.Name, names[m.ToolCallID])
			t.Steps = append(t.Steps, s)
		case "function":
			s := step(domain.RoleTool, content)
			s.ToolName = m.Name
			setStepMeta(&s, "original_role", "function")
			match := slices.IndexFunc(legacy, func(p pending) bool { return p.name == m.Name })
			if match < 0 && len(legacy) > 0 {
				match = 0
			}
			if match >= 0 {
				s.ToolCallID = legacy[match].id
				s.ToolName = cmp.Or(s.ToolName, legacy[match].name)
				legacy = slices.Delete(legacy, match, match+1)
			}
			t.Steps = append(t.Steps, s)
		default:
			return t, domain.InvalidAt(0, field+".role", "unknown role %q (expected system, developer, user, assistant, tool or function)", m.Role)
		}
	}
	return t, nil
}

// openAIPartText is the text of one content part.
func openAIPartText(field string, j int, p json.RawMessage) (string, error) {
	pf := fmt.Sprintf("%s[%d]", field, j)
	var part struct {
		Type    string          `json:"type"`
		Text    json.RawMessage `json:"text"`
		Refusal json.RawMessage `json:"refusal"`
	}
	if err := decodeObjectAt(p, pf, "a content part must be a JSON object", &part); err != nil {
		return "", err
	}
	switch part.Type {
	case "text", "input_text", "output_text":
		s, ok := asJSONString(part.Text)
		if !ok && !isJSONNull(part.Text) {
			return "", domain.InvalidAt(0, pf+".text", "text must be a string")
		}
		return s, nil
	case "refusal":
		s, _ := asJSONString(part.Refusal)
		return s, nil
	case "image_url", "input_image", "image":
		return imagePlaceholder, nil
	case "input_audio", "audio":
		return "[audio]", nil
	case "file", "input_file":
		return "[file]", nil
	case "tool_use", "tool_result", "thinking":
		// An OpenAI reading would silently drop the tool call or result.
		return "", domain.InvalidAt(0, pf+".type", "content part %q is Anthropic's; import with format anthropic_messages", part.Type)
	}
	if s, ok := asJSONString(part.Text); ok && s != "" {
		return s, nil
	}
	if part.Type != "" {
		return "[" + strings.ReplaceAll(part.Type, "_", " ") + "]", nil
	}
	return "", nil
}
