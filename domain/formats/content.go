package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/criticml/critic/domain"
)

// This file holds what the chat and agent-session adapters (openai_chat,
// anthropic_messages, claude_code, codex) share: timestamp normalisation,
// tool-argument decoding, Anthropic content blocks (Claude Code records carry
// Anthropic messages) and the mapping of session-level validation errors back
// to the JSONL line that produced the offending step.

// Placeholders stand in for content a reward model cannot read as text, so
// the step still shows that something was there.
const (
	imagePlaceholder    = "[image]"
	documentPlaceholder = "[document]"
)

// isJSONNull reports whether raw is absent or JSON null.
func isJSONNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// asJSONString returns raw as a Go string when it is a JSON string.
func asJSONString(raw json.RawMessage) (string, bool) {
	if firstJSONByte(raw) != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// timestampLayouts are the ISO 8601 shapes accepted besides RFC 3339. Those
// without a zone are read as UTC: a recorded time with no zone is almost
// always a UTC server log, and the canonical timestamp must carry one.
var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
}

// normalizeTimestamp turns a recorded time into the canonical step
// metadata.timestamp: RFC 3339 with its zone (the source's offset is kept,
// and an RFC 3339 string is kept verbatim so re-imports compare equal).
// It accepts ISO 8601 strings and Unix epochs as numbers or numeric strings;
// an epoch above 1e11 is taken as milliseconds, since 1e11 seconds is past
// the year 5000. Absent or null gives "" (untimed stays untimed).
func normalizeTimestamp(raw json.RawMessage) (string, error) {
	if isJSONNull(raw) {
		return "", nil
	}
	var t time.Time
	if s, ok := asJSONString(raw); ok {
		s = strings.TrimSpace(s)
		if s == "" {
			return "", nil
		}
		if v, err := time.Parse(time.RFC3339Nano, s); err == nil && v.Year() >= 1 && v.Year() <= 9999 {
			return s, nil // already canonical: keep the recorded text exactly
		}
		parsed := false
		for _, layout := range timestampLayouts {
			if v, err := time.Parse(layout, s); err == nil {
				t, parsed = v, true
				break
			}
		}
		if !parsed {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return "", fmt.Errorf("timestamp %q is neither ISO 8601 nor a Unix time", s)
			}
			if t, err = epochTime(f); err != nil {
				return "", err
			}
		}
	} else {
		f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
		if err != nil {
			return "", fmt.Errorf("timestamp must be an ISO 8601 string or a Unix time")
		}
		if t, err = epochTime(f); err != nil {
			return "", err
		}
	}
	if t.Year() < 1 || t.Year() > 9999 {
		return "", fmt.Errorf("timestamp is out of range")
	}
	return t.Format(time.RFC3339Nano), nil
}

func epochTime(f float64) (time.Time, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e15 {
		return time.Time{}, fmt.Errorf("timestamp %v is not a plausible Unix time", f)
	}
	if f > 1e11 {
		f /= 1000
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC(), nil
}

// decodeObject decodes raw as a JSON object (numbers kept as json.Number).
func decodeObject(raw []byte) (map[string]any, bool) {
	if firstJSONByte(raw) != '{' {
		return nil, false
	}
	var m map[string]any
	if decodeJSON(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

// toolArguments turns a tool call's arguments into the canonical tool_input
// object. OpenAI and Codex send arguments as a JSON *string*; some exports
// inline the object instead. Arguments that are not a JSON object (a bare
// string, an array, truncated JSON) are kept verbatim as {"_raw": "<text>"} so
// nothing the model wrote is lost and tool_input stays an object.
func toolArguments(raw json.RawMessage) map[string]any {
	if isJSONNull(raw) {
		return nil
	}
	if s, ok := asJSONString(raw); ok {
		if strings.TrimSpace(s) == "" {
			return nil
		}
		if m, ok := decodeObject([]byte(s)); ok {
			return m
		}
		return map[string]any{"_raw": s}
	}
	if m, ok := decodeObject(raw); ok {
		return m
	}
	return map[string]any{"_raw": string(raw)}
}

// setStepMeta sets a step metadata key, allocating the map on first use.
func setStepMeta(s *domain.Step, key string, v any) { ensureMeta(s)[key] = v }

// ensureMeta returns the step's metadata map, allocating it if needed.
func ensureMeta(s *domain.Step) map[string]any {
	if s.Metadata == nil {
		s.Metadata = map[string]any{}
	}
	return s.Metadata
}

// putString copies a non-empty string into a metadata map.
func putString(m map[string]any, key, v string) {
	if v != "" {
		m[key] = v
	}
}

// anthropicBlock is one Anthropic content block. Only the fields the
// canonical trace uses are read; everything else in a block is ignored.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      json.RawMessage `json:"text"`
	Thinking  json.RawMessage `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   json.RawMessage `json:"is_error"`
}

// anthropicConverter turns Anthropic message content into canonical steps,
// remembering tool names by call id so a tool_result step can carry the name
// of the tool_use it answers.
//
// Mapping (shared by anthropic_messages and claude_code):
//   - text blocks become one step of the message's role; adjacent text (and
//     image placeholders) are joined with "\n".
//   - tool_use (and server_tool_use / mcp_tool_use) becomes its own assistant
//     step with content "", tool_name, tool_input and tool_call_id = id.
//     Text before a call is its own step first: block order is kept.
//   - thinking becomes its own assistant step whose content is the reasoning
//     and metadata.thinking = true: a reward model should see the reasoning,
//     yet be able to tell it from what the user was shown. redacted_thinking
//     and empty thinking (signature only) are dropped: there is nothing to read.
//   - tool_result becomes a tool step (tool_call_id = tool_use_id, content the
//     string or joined text blocks, metadata.is_error when set). In a user
//     message the tool steps come first and the user's text after them, since
//     the results answer the previous assistant turn and the text is new input.
//   - image and document blocks become "[image]" / "[document]" placeholders.
//   - other block types are kept as their text when they have one and are
//     otherwise skipped: new block types must not make old importers fail.
type anthropicConverter struct {
	names map[string]string
}

// steps converts one message. role is already canonical (system, user or
// assistant); field is the JSON path of the content for error messages.
func (c *anthropicConverter) steps(role domain.Role, content json.RawMessage, field string) ([]domain.Step, error) {
	if isJSONNull(content) {
		return nil, nil
	}
	if s, ok := asJSONString(content); ok {
		if s == "" {
			return nil, nil
		}
		return []domain.Step{{Role: role, Content: s}}, nil
	}
	raws, err := jsonArray(content, field, "content must be a string or an array of content blocks")
	if err != nil {
		return nil, err
	}
	var out, tools []domain.Step
	var text []string
	flush := func() {
		if len(text) > 0 {
			out = append(out, domain.Step{Role: role, Content: strings.Join(text, "\n")})
			text = nil
		}
	}
	for j, raw := range raws {
		bf := fmt.Sprintf("%s[%d]", field, j)
		b, err := decodeBlock(raw, bf)
		if err != nil {
			return nil, err
		}
		switch b.Type {
		case "text":
			s, ok := asJSONString(b.Text)
			if !ok && !isJSONNull(b.Text) {
				return nil, domain.InvalidAt(0, bf+".text", "text must be a string")
			}
			if s != "" {
				text = append(text, s)
			}
		case "image":
			text = append(text, imagePlaceholder)
		case "document":
			text = append(text, documentPlaceholder)
		case "thinking":
			s, _ := asJSONString(b.Thinking)
			if strings.TrimSpace(s) == "" {
				continue
			}
			flush()
			out = append(out, domain.Step{Role: domain.RoleAssistant, Content: s, Metadata: map[string]any{"thinking": true}})
		case "redacted_thinking":
		case "tool_use", "server_tool_use", "mcp_tool_use":
			flush()
			st := domain.Step{Role: domain.RoleAssistant, ToolName: b.Name, ToolCallID: b.ID}
			if !isJSONNull(b.Input) {
				m, ok := decodeObject(b.Input)
				if !ok {
					return nil, domain.InvalidAt(0, bf+".input", "tool input must be a JSON object")
				}
				st.ToolInput = m
			}
			if b.ID != "" {
				c.names[b.ID] = b.Name
			}
			out = append(out, st)
		case "tool_result", "mcp_tool_result", "web_search_tool_result":
			st, err := c.toolResult(b, bf)
			if err != nil {
				return nil, err
			}
			if role == domain.RoleUser {
				tools = append(tools, st)
			} else {
				flush()
				out = append(out, st)
			}
		default:
			if s, ok := asJSONString(b.Text); ok && s != "" {
				text = append(text, s)
			}
		}
	}
	flush()
	return append(tools, out...), nil
}

func (c *anthropicConverter) toolResult(b anthropicBlock, field string) (domain.Step, error) {
	st := domain.Step{Role: domain.RoleTool, ToolCallID: b.ToolUseID, ToolName: c.names[b.ToolUseID]}
	text, err := blockText(b.Content, field+".content")
	if err != nil {
		return st, err
	}
	st.Content = text
	if string(bytes.TrimSpace(b.IsError)) == "true" {
		setStepMeta(&st, "is_error", true)
	}
	return st, nil
}

// blockText flattens a tool result's content (a string or an array of
// blocks) to text: text blocks joined with "\n", images as placeholders.
func blockText(raw json.RawMessage, field string) (string, error) {
	if b := firstJSONByte(raw); b != '[' && b != '"' && !isJSONNull(raw) {
		// Some tools return an object; keep it as JSON text rather than fail.
		return string(bytes.TrimSpace(raw)), nil
	}
	return joinContent(raw, field, "", blockItemText) // any shape but an array was handled above
}

// blockItemText is the text of one block of a tool result.
func blockItemText(field string, j int, raw json.RawMessage) (string, error) {
	b, err := decodeBlock(raw, fmt.Sprintf("%s[%d]", field, j))
	if err != nil {
		return "", err
	}
	switch b.Type {
	case "image":
		return imagePlaceholder, nil
	case "document":
		return documentPlaceholder, nil
	}
	s, _ := asJSONString(b.Text)
	return s, nil
}

// decodeObjectAt decodes raw, which must be a JSON object (a message, a
// part, a block), into v; notObject is the error for any other shape.
func decodeObjectAt(raw json.RawMessage, field, notObject string, v any) error {
	if firstJSONByte(raw) != '{' {
		return domain.InvalidAt(0, field, "%s", notObject)
	}
	if err := decodeJSON(raw, v); err != nil {
		return domain.InvalidAt(0, field, "%v", err)
	}
	return nil
}

// jsonArray decodes raw, which must be a JSON array (a message list, a
// message's parts or blocks); notArray is the error for any other shape.
func jsonArray(raw json.RawMessage, field, notArray string) ([]json.RawMessage, error) {
	if firstJSONByte(raw) != '[' {
		return nil, domain.InvalidAt(0, field, "%s", notArray)
	}
	var items []json.RawMessage
	if err := decodeJSON(raw, &items); err != nil {
		return nil, domain.InvalidAt(0, field, "%v", err)
	}
	return items, nil
}

// joinContent flattens content that is null, a string or an array of items
// to text, the shape codex, openai_chat and tool results share. A string
// item is kept as it is; any other goes to itemText, which returns its text
// ("" adds nothing) given the content's field and the item's index, so each
// format keeps its own item types and error messages. The texts are joined
// with "\n"; notArray is the error for content of another shape.
func joinContent(raw json.RawMessage, field, notArray string, itemText func(field string, j int, item json.RawMessage) (string, error)) (string, error) {
	if isJSONNull(raw) {
		return "", nil
	}
	if s, ok := asJSONString(raw); ok {
		return s, nil
	}
	items, err := jsonArray(raw, field, notArray)
	if err != nil {
		return "", err
	}
	var parts []string
	for j, item := range items {
		if s, ok := asJSONString(item); ok {
			parts = append(parts, s)
			continue
		}
		s, err := itemText(field, j, item)
		if err != nil {
			return "", err
		}
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n"), nil
}

func decodeBlock(raw json.RawMessage, field string) (anthropicBlock, error) {
	var b anthropicBlock
	err := decodeObjectAt(raw, field, "a content block must be a JSON object", &b)
	return b, err
}

// stepFieldRE matches the step index at the start of a ValidateTrace field.
var stepFieldRE = regexp.MustCompile(`^steps\[(\d+)\]`)

// validateSession validates a whole-file trace (claude_code, codex) and, when
// the problem is one step, reports the JSONL line that step came from:
// stepLines[i] is the line of step i.
func validateSession(t domain.Trace, stepLines []int) error {
	err := domain.ValidateTrace(t, 0)
	v, ok := errors.AsType[*domain.ValidationError](err)
	if !ok {
		return err
	}
	if m := stepFieldRE.FindStringSubmatch(v.Field); m != nil {
		if i, convErr := strconv.Atoi(m[1]); convErr == nil && i < len(stepLines) {
			c := *v
			c.Line = stepLines[i]
			return &c
		}
	}
	return err
}

// traceHeader reads the optional id, title and metadata that openai_chat and
// anthropic_messages lines may carry beside their messages.
type traceHeader struct {
	ID       json.RawMessage `json:"id"`
	Title    json.RawMessage `json:"title"`
	Metadata json.RawMessage `json:"metadata"`
}

func (h traceHeader) apply(t *domain.Trace) error {
	if !isJSONNull(h.ID) {
		id, err := scalarString(h.ID)
		if err != nil {
			return domain.InvalidAt(0, "id", "%v", err)
		}
		t.ExternalID = id
	}
	if !isJSONNull(h.Title) {
		s, ok := asJSONString(h.Title)
		if !ok {
			return domain.InvalidAt(0, "title", "title must be a string")
		}
		t.Title = s
	}
	if !isJSONNull(h.Metadata) {
		m, ok := decodeObject(h.Metadata)
		if !ok {
			return domain.InvalidAt(0, "metadata", "metadata must be a JSON object")
		}
		t.Metadata = m
	}
	return nil
}

// objectLines reads the JSONL of stash, openai_chat and anthropic_messages:
// one trace per line, each a JSON object (holding the key want) that
// convert turns into a validated trace. A payload with no line is refused.
func objectLines(data []byte, want string, convert func(line int, raw []byte) (domain.Trace, error)) ([]domain.Trace, error) {
	var out []domain.Trace
	err := eachLine(data, func(line int, raw []byte) error {
		if firstJSONByte(raw) != '{' {
			return domain.InvalidAt(line, "", "expected a JSON object with %q", want)
		}
		t, err := convert(line, raw)
		if err != nil {
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

// validated is convert followed by domain.ValidateTrace.
func validated(convert func(line int, raw []byte) (domain.Trace, error)) func(line int, raw []byte) (domain.Trace, error) {
	return func(line int, raw []byte) (domain.Trace, error) {
		t, err := convert(line, raw)
		if err != nil {
			return t, err
		}
		return t, domain.ValidateTrace(t, line)
	}
}

// messageStamp is a chat message's metadata.timestamp: its "timestamp",
// else its "created_at", normalised; field is the message's JSON path.
func messageStamp(timestamp, createdAt json.RawMessage, field string) (string, error) {
	ts, tsField := timestamp, field+".timestamp"
	if isJSONNull(ts) {
		ts, tsField = createdAt, field+".created_at"
	}
	stamp, err := normalizeTimestamp(ts)
	if err != nil {
		return "", domain.InvalidAt(0, tsField, "%v", err)
	}
	return stamp, nil
}

// chatKind is which chat-messages format a payload has.
type chatKind int

const (
	chatNone chatKind = iota
	chatOpenAI
	chatAnthropic
)

// anthropicOnlyBlocks are content block types OpenAI messages never use.
var anthropicOnlyBlocks = map[string]bool{
	"tool_use": true, "tool_result": true, "thinking": true, "redacted_thinking": true,
	"image": true, "document": true, "server_tool_use": true, "web_search_tool_result": true,
	"mcp_tool_use": true, "mcp_tool_result": true,
}

// chatDetectLines bounds how many lines detection looks at.
const chatDetectLines = 50

// classifyChat decides between openai_chat and anthropic_messages so that
// exactly one of them claims a payload. Both are JSONL of {"messages": [...]}
// objects; a payload is Anthropic when any of its first lines has a top-level
// "system" key or an Anthropic-only content block (tool_use, tool_result,
// thinking, image, …), and OpenAI otherwise. A plain text conversation thus
// goes to openai_chat, and both adapters would read it the same way. A
// top-level JSON array of {"role": …} objects is OpenAI.
func classifyChat(data []byte) chatKind {
	switch firstJSONByte(data) {
	case '[':
		var msgs []json.RawMessage
		if json.Unmarshal(data, &msgs) != nil || len(msgs) == 0 {
			return chatNone
		}
		var m struct {
			Role *string `json:"role"`
		}
		if json.Unmarshal(msgs[0], &m) != nil || m.Role == nil {
			return chatNone
		}
		return chatOpenAI
	case '{':
	default:
		return chatNone
	}
	kind := chatNone
	n := 0
	_ = eachLine(data, func(_ int, raw []byte) error {
		n++
		var probe struct {
			System   json.RawMessage `json:"system"`
			Messages []struct {
				Role    *string         `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			Request  json.RawMessage `json:"request"`
			Response json.RawMessage `json:"response"`
		}
		if n == 1 && firstJSONByte(raw) == '{' && json.Unmarshal(raw, &probe) == nil && probe.Messages == nil && isAnthropicExchange(probe.Request, probe.Response) {
			kind = chatAnthropic
			return errStopScan
		}
		if firstJSONByte(raw) != '{' || json.Unmarshal(raw, &probe) != nil || probe.Messages == nil {
			if n == 1 {
				return errStopScan
			}
			return nil
		}
		if n == 1 {
			if len(probe.Messages) > 0 && probe.Messages[0].Role == nil {
				return errStopScan
			}
			kind = chatOpenAI
		}
		if probe.System != nil {
			kind = chatAnthropic
			return errStopScan
		}
		for _, m := range probe.Messages {
			if firstJSONByte(m.Content) != '[' {
				continue
			}
			var blocks []struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(m.Content, &blocks) != nil {
				continue
			}
			for _, b := range blocks {
				if anthropicOnlyBlocks[b.Type] {
					kind = chatAnthropic
					return errStopScan
				}
			}
		}
		if n >= chatDetectLines {
			return errStopScan
		}
		return nil
	})
	return kind
}

// errStopScan ends an eachLine scan early.
var errStopScan = errors.New("stop")
