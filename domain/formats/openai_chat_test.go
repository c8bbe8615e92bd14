package formats

import (
	"testing"

	"github.com/criticml/critic/domain"
)

func TestOpenAIChatTestdata(t *testing.T) {
	traces := mustParse(t, OpenAIChat{}, readTestdata(t, "openai_chat.jsonl"))
	if len(traces) != 2 {
		t.Fatalf("got %d traces, want 2", len(traces))
	}
	first := traces[0]
	if first.ExternalID != "oa-1" || first.Title != "Weather lookup" || first.Metadata["agent"] != "weather-bot" {
		t.Fatalf("header not kept: %+v", first)
	}
	ts := map[string]any{"timestamp": "2025-03-01T09:00:01Z"}
	requireSteps(t, first.Steps, []domain.Step{
		{Role: domain.RoleSystem, Content: "You are a weather assistant."},
		{Role: domain.RoleUser, Content: "Weather in Paris and Rome?", Metadata: map[string]any{"timestamp": "2025-03-01T10:00:00+01:00"}},
		{Role: domain.RoleAssistant, Content: "Let me check both.", Metadata: ts},
		{Role: domain.RoleAssistant, ToolName: "get_weather", ToolInput: map[string]any{"city": "Paris"}, ToolCallID: "call_1", Metadata: ts},
		{Role: domain.RoleAssistant, ToolName: "get_weather", ToolInput: map[string]any{"city": "Rome"}, ToolCallID: "call_2", Metadata: ts},
		{Role: domain.RoleTool, Content: "12C, cloudy", ToolName: "get_weather", ToolCallID: "call_1"},
		{Role: domain.RoleTool, Content: "18C\nsunny", ToolName: "get_weather", ToolCallID: "call_2"},
		{Role: domain.RoleAssistant, Content: "Paris is 12C and cloudy; Rome is 18C and sunny."},
	})
	requireSteps(t, traces[1].Steps, []domain.Step{
		{Role: domain.RoleSystem, Content: "Answer briefly.", Metadata: map[string]any{"original_role": "developer"}},
		{Role: domain.RoleUser, Content: "What is this?\n[image]"},
		{Role: domain.RoleAssistant, ToolName: "describe_image", ToolInput: map[string]any{"_raw": "not json"}, ToolCallID: "function_call_2"},
		{Role: domain.RoleTool, Content: "a cat", ToolName: "describe_image", ToolCallID: "function_call_2", Metadata: map[string]any{"original_role": "function"}},
		{Role: domain.RoleAssistant, Content: "A cat."},
	})
}

func TestOpenAIChatArray(t *testing.T) {
	traces := mustParse(t, OpenAIChat{}, readTestdata(t, "openai_chat_array.json"))
	if len(traces) != 1 {
		t.Fatalf("got %d traces, want 1", len(traces))
	}
	requireSteps(t, traces[0].Steps, []domain.Step{
		{Role: domain.RoleUser, Content: "Say hi"},
		{Role: domain.RoleAssistant, Content: "Hi!"},
	})
}

func TestOpenAIChatSteps(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []domain.Step
	}{
		{
			name: "tool calls without text emit only call steps",
			in:   `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"run","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`,
			want: []domain.Step{
				{Role: domain.RoleUser, Content: "go"},
				{Role: domain.RoleAssistant, ToolName: "run", ToolCallID: "c1", ToolInput: map[string]any{}},
				{Role: domain.RoleTool, Content: "ok", ToolName: "run", ToolCallID: "c1"},
			},
		},
		{
			name: "arguments given as an object and a tool name on the result",
			in:   `{"messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"run","arguments":{"n":2}}}]},{"role":"tool","tool_call_id":"c1","name":"run_v2","content":"ok"}]}`,
			want: []domain.Step{
				{Role: domain.RoleUser, Content: "go"},
				{Role: domain.RoleAssistant, ToolName: "run", ToolCallID: "c1", ToolInput: map[string]any{"n": 2}},
				{Role: domain.RoleTool, Content: "ok", ToolName: "run_v2", ToolCallID: "c1"},
			},
		},
		{
			name: "custom tool call keeps free-form input",
			in:   `{"messages":[{"role":"user","content":"patch"},{"role":"assistant","tool_calls":[{"id":"c1","type":"custom","custom":{"name":"apply_patch","input":"*** Begin Patch"}}]}]}`,
			want: []domain.Step{
				{Role: domain.RoleUser, Content: "patch"},
				{Role: domain.RoleAssistant, ToolName: "apply_patch", ToolCallID: "c1", ToolInput: map[string]any{"input": "*** Begin Patch"}},
			},
		},
		{
			name: "refusal, names and unix timestamps",
			in:   `{"messages":[{"role":"user","name":"alice","content":"do it","timestamp":1700000000},{"role":"assistant","content":null,"refusal":"I can't."}]}`,
			want: []domain.Step{
				{Role: domain.RoleUser, Content: "do it", Metadata: map[string]any{"name": "alice", "timestamp": "2023-11-14T22:13:20Z"}},
				{Role: domain.RoleAssistant, Content: "I can't.", Metadata: map[string]any{"refusal": true}},
			},
		},
		{
			name: "legacy function results pair by name",
			in:   `{"messages":[{"role":"user","content":"x"},{"role":"assistant","function_call":{"name":"a","arguments":"{\"k\":1}"}},{"role":"function","name":"a","content":"A"}]}`,
			want: []domain.Step{
				{Role: domain.RoleUser, Content: "x"},
				{Role: domain.RoleAssistant, ToolName: "a", ToolInput: map[string]any{"k": 1}, ToolCallID: "function_call_1"},
				{Role: domain.RoleTool, Content: "A", ToolName: "a", ToolCallID: "function_call_1", Metadata: map[string]any{"original_role": "function"}},
			},
		},
		{
			name: "tool message without an id is an unpaired result",
			in:   `{"messages":[{"role":"user","content":"x"},{"role":"tool","content":"orphan"}]}`,
			want: []domain.Step{
				{Role: domain.RoleUser, Content: "x"},
				{Role: domain.RoleTool, Content: "orphan"},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traces := mustParse(t, OpenAIChat{}, []byte(c.in))
			requireSteps(t, traces[0].Steps, c.want)
		})
	}
}

func TestOpenAIChatErrors(t *testing.T) {
	good := `{"messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name  string
		in    string
		line  int
		field string
	}{
		{"malformed JSON on line 3", good + "\n" + good + "\n{\"messages\": [\n", 3, ""},
		{"unknown role", good + "\n" + `{"messages":[{"role":"user","content":"a"},{"role":"robot","content":"b"}]}`, 2, "messages[1].role"},
		{"non-string content", `{"messages":[{"role":"user","content":{"text":"hi"}}]}`, 1, "messages[0].content"},
		{"numeric content", `{"messages":[{"role":"user","content":42}]}`, 1, "messages[0].content"},
		{"tool result without matching call", `{"messages":[{"role":"user","content":"a"},{"role":"tool","tool_call_id":"nope","content":"x"}]}`, 1, "steps[1].tool_call_id"},
		{"only system", `{"messages":[{"role":"system","content":"rules"}]}`, 1, "steps"},
		{"no messages", `{"messages":[]}`, 1, "steps"},
		{"missing messages", `{"id":"x"}`, 1, "messages"},
		{"bad timestamp", `{"messages":[{"role":"user","content":"a","timestamp":"soon"}]}`, 1, "messages[0].timestamp"},
		{"anthropic block", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x"}]}]}`, 1, "messages[0].content[0].type"},
		{"tool call without function", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function"}]}]}`, 1, "messages[0].tool_calls[0].function"},
		{"not an object", `["a"]` + "\n", 0, "messages[0]"},
		{"line not an object", `"just a string"`, 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traces, err := OpenAIChat{}.Parse([]byte(c.in))
			if traces != nil {
				t.Fatalf("traces returned with an error")
			}
			requireInvalid(t, err, c.line, c.field)
		})
	}
}

func TestOpenAIChatEmptyPayload(t *testing.T) {
	_, err := OpenAIChat{}.Parse([]byte("\n\n"))
	requireInvalid(t, err, 0, "")
}

func FuzzOpenAIChat(f *testing.F) {
	f.Add(readTestdata(f, "openai_chat.jsonl"))
	f.Add(readTestdata(f, "openai_chat_array.json"))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","function_call":{"name":"f","arguments":"[1]"}},{"role":"function","content":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { parseInvariants(t, OpenAIChat{}, data) })
}
