package formats

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/criticml/critic/domain"
)

// AnthropicMessages reads Anthropic Messages API conversations: JSONL with one
// {"system"?: string | [text blocks], "messages": [...], "id"?, "title"?,
// "metadata"?} per line, or one API call as a proxy or SDK hook captures it,
// {"request": {"system"?, "messages", "model"?}, "response": {"id",
// "type": "message", "role": "assistant", "content": [...], "model"?}}: the
// request's conversation followed by the response as the last assistant
// turn; the response id is the trace's id (unless the line has its own), so
// the same capture imported again is the same trace.
//
// The system prompt becomes the first step. Content blocks map as described
// on anthropicConverter: text joined per run, tool_use as its own assistant
// step, tool_result as a tool step (before the user's text in the same
// message), thinking as an assistant step with metadata.thinking = true,
// redacted_thinking dropped, images as "[image]". A message "timestamp" or
// "created_at" becomes metadata.timestamp on every step the message yields,
// as in openai_chat. A "system" role inside messages (some exports put it
// there) is accepted as a system step.
type AnthropicMessages struct{}

func (AnthropicMessages) Name() string { return "anthropic_messages" }
func (AnthropicMessages) Description() string {
	return `Anthropic Messages JSONL: one {"system": ..., "messages": [...]} per line, or captured calls {"request": ..., "response": ...}; content blocks text, tool_use, tool_result, thinking.`
}

// Detect: JSONL of {"messages": [...]} with a top-level "system" key or an
// Anthropic-only content block in its first lines; see classifyChat.
func (AnthropicMessages) Detect(data []byte) bool { return classifyChat(data) == chatAnthropic }

func (AnthropicMessages) Parse(data []byte) ([]domain.Trace, error) {
	return objectLines(data, "messages", validated(func(line int, raw []byte) (domain.Trace, error) {
		t := domain.Trace{Steps: []domain.Step{}}
		var rec anthropicRecord
		if err := decodeJSON(raw, &rec); err != nil {
			return t, err
		}
		var resp *anthropicResponse
		msgField, notArray := "messages", `missing "messages" array`
		if isJSONNull(rec.Messages) && !isJSONNull(rec.Request) {
			var err error
			if resp, err = rec.exchange(line); err != nil {
				return t, err
			}
			msgField, notArray = "request.messages", `missing "messages" array in "request"`
		}
		msgs, err := jsonArray(rec.Messages, msgField, notArray)
		if err != nil {
			return t, err
		}
		if err := rec.traceHeader.apply(&t); err != nil {
			return t, err
		}
		if resp != nil {
			t.ExternalID = cmp.Or(t.ExternalID, resp.ID)
			if resp.Model != "" {
				if t.Metadata == nil {
					t.Metadata = map[string]any{}
				}
				if _, set := t.Metadata["model"]; !set {
					t.Metadata["model"] = resp.Model
				}
			}
		}
		conv := &anthropicConverter{names: map[string]string{}}
		if !isJSONNull(rec.System) {
			sys, err := conv.steps(domain.RoleSystem, rec.System, "system")
			if err != nil {
				return t, err
			}
			// A system prompt is text only; join whatever blocks it had.
			var parts []string
			for _, s := range sys {
				if s.Content != "" {
					parts = append(parts, s.Content)
				}
			}
			if len(parts) > 0 {
				t.Steps = append(t.Steps, domain.Step{Role: domain.RoleSystem, Content: strings.Join(parts, "\n")})
			}
		}
		for i, mraw := range msgs {
			field := fmt.Sprintf("%s[%d]", msgField, i)
			var m struct {
				Role      string          `json:"role"`
				Content   json.RawMessage `json:"content"`
				Timestamp json.RawMessage `json:"timestamp"`
				CreatedAt json.RawMessage `json:"created_at"`
			}
			if err := decodeObjectAt(mraw, field, "a message must be a JSON object", &m); err != nil {
				return t, err
			}
			role, known := anthropicRoles[m.Role]
			if !known {
				return t, domain.InvalidAt(line, field+".role", "unknown role %q (expected user or assistant)", m.Role)
			}
			steps, err := conv.steps(role, m.Content, field+".content")
			if err != nil {
				return t, err
			}
			stamp, err := messageStamp(m.Timestamp, m.CreatedAt, field)
			if err != nil {
				return t, err
			}
			if stamp != "" {
				for k := range steps {
					setStepMeta(&steps[k], "timestamp", stamp)
				}
			}
			t.Steps = append(t.Steps, steps...)
		}
		if resp != nil {
			steps, err := conv.steps(domain.RoleAssistant, resp.Content, "response.content")
			if err != nil {
				return t, err
			}
			t.Steps = append(t.Steps, steps...)
		}
		return t, nil
	}))
}

// anthropicRoles are the message roles a conversation may hold ("system"
// inside messages is accepted, though the API takes it beside them).
var anthropicRoles = map[string]domain.Role{"user": domain.RoleUser, "assistant": domain.RoleAssistant, "system": domain.RoleSystem}

// anthropicResponse is the part of a Messages API response a trace keeps.
type anthropicResponse struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
}

// isAnthropicExchange reports whether request and response are one Messages
// API call: a request with messages and a response that is an assistant
// message with content blocks (an OpenAI response has choices instead).
func isAnthropicExchange(request, response json.RawMessage) bool {
	if firstJSONByte(request) != '{' || firstJSONByte(response) != '{' {
		return false
	}
	var req struct {
		Messages json.RawMessage `json:"messages"`
	}
	var resp anthropicResponse
	if json.Unmarshal(request, &req) != nil || firstJSONByte(req.Messages) != '[' || json.Unmarshal(response, &resp) != nil {
		return false
	}
	return (resp.Type == "message" || resp.Role == "assistant") && firstJSONByte(resp.Content) == '['
}

// anthropicRecord is one line: a conversation, or one captured call.
type anthropicRecord struct {
	traceHeader
	System   json.RawMessage `json:"system"`
	Messages json.RawMessage `json:"messages"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response"`
}

// exchange reads a captured {request, response} call: the request's system
// and messages become the line's, and the response, whose content is the
// conversation's last assistant turn, is returned.
func (rec *anthropicRecord) exchange(line int) (*anthropicResponse, error) {
	var req struct {
		System   json.RawMessage `json:"system"`
		Messages json.RawMessage `json:"messages"`
	}
	if err := decodeObjectAt(rec.Request, "request", "request must be a JSON object", &req); err != nil {
		return nil, err
	}
	rec.Messages = req.Messages
	if isJSONNull(rec.System) {
		rec.System = req.System
	}
	if isJSONNull(rec.Response) {
		return nil, domain.InvalidAt(line, "response", `missing "response": the call's answer is the trace's last assistant turn`)
	}
	var resp anthropicResponse
	if firstJSONByte(rec.Response) != '{' || decodeJSON(rec.Response, &resp) != nil {
		return nil, domain.InvalidAt(line, "response", "response must be a Messages API response object")
	}
	if resp.Role != "" && resp.Role != "assistant" {
		return nil, domain.InvalidAt(line, "response.role", "unknown role %q (a response is the assistant's)", resp.Role)
	}
	if firstJSONByte(resp.Content) != '[' {
		return nil, domain.InvalidAt(line, "response.content", `missing "content" array of blocks`)
	}
	return &resp, nil
}
