package formats

import (
	"testing"

	"github.com/criticml/critic/domain"
)

func TestAnthropicMessagesTestdata(t *testing.T) {
	traces := mustParse(t, AnthropicMessages{}, readTestdata(t, "anthropic_messages.jsonl"))
	if len(traces) != 2 {
		t.Fatalf("got %d traces, want 2", len(traces))
	}
	if traces[0].ExternalID != "an-1" {
		t.Fatalf("id = %q", traces[0].ExternalID)
	}
	requireSteps(t, traces[0].Steps, []domain.Step{
		{Role: domain.RoleSystem, Content: "You are a coding agent."},
		{Role: domain.RoleUser, Content: "List the files."},
		{Role: domain.RoleAssistant, Content: "I should run ls.", Metadata: map[string]any{"thinking": true}},
		{Role: domain.RoleAssistant, Content: "Running ls."},
		{Role: domain.RoleAssistant, ToolName: "bash", ToolInput: map[string]any{"command": "ls"}, ToolCallID: "toolu_1"},
		{Role: domain.RoleAssistant, ToolName: "bash", ToolInput: map[string]any{"command": "pwd"}, ToolCallID: "toolu_2"},
		{Role: domain.RoleTool, Content: "a.go\nb.go", ToolName: "bash", ToolCallID: "toolu_1"},
		{Role: domain.RoleTool, Content: "/repo", ToolName: "bash", ToolCallID: "toolu_2"},
		{Role: domain.RoleUser, Content: "Thanks, now explain."},
		{Role: domain.RoleAssistant, Content: "There are two Go files in /repo."},
	})
	requireSteps(t, traces[1].Steps, []domain.Step{
		{Role: domain.RoleSystem, Content: "Be terse.\nNo emojis."},
		{Role: domain.RoleUser, Content: "[image]\nWhat is in the picture?"},
		{Role: domain.RoleAssistant, Content: "A red square."},
	})
}

func TestAnthropicMessagesSteps(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []domain.Step
	}{
		{
			name: "text after a tool call stays after it; errors and timestamps kept",
			in: `{"messages":[{"role":"user","content":"go","timestamp":"2025-01-01T00:00:00Z"},` +
				`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"tool_use","id":"t1","name":"run","input":{}},{"type":"text","text":"c"}]},` +
				`{"role":"user","content":[{"type":"text","text":"first"},{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"boom"},{"type":"image","source":{}}]}]}]}`,
			want: []domain.Step{
				{Role: domain.RoleUser, Content: "go", Metadata: map[string]any{"timestamp": "2025-01-01T00:00:00Z"}},
				{Role: domain.RoleAssistant, Content: "a\nb"},
				{Role: domain.RoleAssistant, ToolName: "run", ToolCallID: "t1", ToolInput: map[string]any{}}, // input {} stays {}
				{Role: domain.RoleAssistant, Content: "c"},
				{Role: domain.RoleTool, Content: "boom\n[image]", ToolName: "run", ToolCallID: "t1", Metadata: map[string]any{"is_error": true}},
				{Role: domain.RoleUser, Content: "first"},
			},
		},
		{
			name: "empty thinking and unknown blocks are skipped",
			in:   `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"","signature":"s"},{"type":"citations_delta"},{"type":"text","text":"A"}]}]}`,
			want: []domain.Step{
				{Role: domain.RoleUser, Content: "q"},
				{Role: domain.RoleAssistant, Content: "A"},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traces := mustParse(t, AnthropicMessages{}, []byte(c.in))
			requireSteps(t, traces[0].Steps, c.want)
		})
	}
}

func TestAnthropicMessagesErrors(t *testing.T) {
	good := `{"system":"s","messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name  string
		in    string
		line  int
		field string
	}{
		{"malformed JSON on line 2", good + "\n{oops}\n", 2, ""},
		{"unknown role", `{"messages":[{"role":"tool","content":"x"}]}`, 1, "messages[0].role"},
		{"non-string content", `{"messages":[{"role":"user","content":7}]}`, 1, "messages[0].content"},
		{"block not an object", `{"messages":[{"role":"user","content":["x"]}]}`, 1, "messages[0].content[0]"},
		{"tool input not an object", `{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":"str"}]}]}`, 1, "messages[1].content[0].input"},
		{"tool result without matching call", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"zz","content":"r"}]}]}`, 1, "steps[0].tool_call_id"},
		{"only system", `{"system":"rules","messages":[]}`, 1, "steps"},
		{"bad system", `{"system":5,"messages":[{"role":"user","content":"x"}]}`, 1, "system"},
		{"bad title", `{"title":3,"messages":[{"role":"user","content":"x"}]}`, 1, "title"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traces, err := AnthropicMessages{}.Parse([]byte(c.in))
			if traces != nil {
				t.Fatalf("traces returned with an error")
			}
			requireInvalid(t, err, c.line, c.field)
		})
	}
}

func TestChatDetection(t *testing.T) {
	cases := []struct {
		in   string
		want chatKind
	}{
		{`{"messages":[{"role":"user","content":"hi"}]}`, chatOpenAI},
		{`{"system":"s","messages":[{"role":"user","content":"hi"}]}`, chatAnthropic},
		// Anthropic blocks on a later line still decide.
		{`{"messages":[{"role":"user","content":"hi"}]}` + "\n" + `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]}]}`, chatAnthropic},
		{`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, chatOpenAI},
		{`[{"role":"user","content":"hi"}]`, chatOpenAI},
		{`[{"id":"trace","observations":[]}]`, chatNone},
		{`{"steps":[]}`, chatNone},
		{`{"messages":[{"content":"no role"}]}`, chatNone},
		{``, chatNone},
	}
	for _, c := range cases {
		if got := classifyChat([]byte(c.in)); got != c.want {
			t.Errorf("classifyChat(%s) = %d, want %d", c.in, got, c.want)
		}
	}
}

func FuzzAnthropicMessages(f *testing.F) {
	f.Add(readTestdata(f, "anthropic_messages.jsonl"))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"r"}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { parseInvariants(t, AnthropicMessages{}, data) })
}
