package formats

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/criticml/critic/domain"
)

// AnthropicMessages reads Anthropic Messages API conversations: JSONL with one
// {"system"?: string | [text blocks], "messages": [...], "id"?, "title"?,
// "metadata"?} per line.
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
	return `Anthropic Messages JSONL: one {"system": ..., "messages": [...]} per line; content blocks text, tool_use, tool_result, thinking.`
}

// Detect: JSONL of {"messages": [...]} with a top-level "system" key or an
// Anthropic-only content block in its first lines; see classifyChat.
func (AnthropicMessages) Detect(data []byte) bool { return classifyChat(data) == chatAnthropic }

func (AnthropicMessages) Parse(data []byte) ([]domain.Trace, error) {
	var out []domain.Trace
	err := eachLine(data, func(line int, raw []byte) error {
		if firstJSONByte(raw) != '{' {
			return domain.InvalidAt(line, "", `expected a JSON object with "messages"`)
		}
		var rec struct {
			traceHeader
			System   json.RawMessage `json:"system"`
			Messages json.RawMessage `json:"messages"`
		}
		if err := decodeJSON(raw, &rec); err != nil {
			return err
		}
		if isJSONNull(rec.Messages) || firstJSONByte(rec.Messages) != '[' {
			return domain.InvalidAt(line, "messages", `missing "messages" array`)
		}
		var msgs []json.RawMessage
		if err := decodeJSON(rec.Messages, &msgs); err != nil {
			return domain.InvalidAt(line, "messages", "%v", err)
		}
		t := domain.Trace{Steps: []domain.Step{}}
		if err := rec.traceHeader.apply(&t); err != nil {
			return err
		}
		conv := newAnthropicConverter()
		if !isJSONNull(rec.System) {
			sys, err := conv.steps(domain.RoleSystem, rec.System, "system")
			if err != nil {
				return err
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
			field := fmt.Sprintf("messages[%d]", i)
			if firstJSONByte(mraw) != '{' {
				return domain.InvalidAt(line, field, "a message must be a JSON object")
			}
			var m struct {
				Role      string          `json:"role"`
				Content   json.RawMessage `json:"content"`
				Timestamp json.RawMessage `json:"timestamp"`
				CreatedAt json.RawMessage `json:"created_at"`
			}
			if err := decodeJSON(mraw, &m); err != nil {
				return domain.InvalidAt(line, field, "%v", err)
			}
			var role domain.Role
			switch m.Role {
			case "user":
				role = domain.RoleUser
			case "assistant":
				role = domain.RoleAssistant
			case "system":
				role = domain.RoleSystem
			default:
				return domain.InvalidAt(line, field+".role", "unknown role %q (expected user or assistant)", m.Role)
			}
			steps, err := conv.steps(role, m.Content, field+".content")
			if err != nil {
				return err
			}
			ts, tsField := m.Timestamp, field+".timestamp"
			if isJSONNull(ts) {
				ts, tsField = m.CreatedAt, field+".created_at"
			}
			stamp, err := normalizeTimestamp(ts)
			if err != nil {
				return domain.InvalidAt(line, tsField, "%v", err)
			}
			if stamp != "" {
				for k := range steps {
					setStepMeta(&steps[k], "timestamp", stamp)
				}
			}
			t.Steps = append(t.Steps, steps...)
		}
		if err := domain.ValidateTrace(t, line); err != nil {
			return err
		}
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, domain.Invalid("the payload holds no traces")
	}
	return out, nil
}
