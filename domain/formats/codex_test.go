package formats

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

func cxTS(s string) map[string]any {
	return map[string]any{"timestamp": "2025-10-29T00:59:" + s + ".000Z"}
}

func cxMeta(s string, kv ...any) map[string]any {
	m := cxTS(s)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func TestCodexTestdata(t *testing.T) {
	traces := mustParse(t, Codex{}, readTestdata(t, "codex.jsonl"))
	if len(traces) != 1 {
		t.Fatalf("got %d traces", len(traces))
	}
	tr := traces[0]
	if tr.ExternalID != "019a-sess" || !tr.SessionSync {
		t.Fatalf("id/sync = %q %v", tr.ExternalID, tr.SessionSync)
	}
	requireJSONEqual(t, tr.Metadata, map[string]any{
		"agent": "codex", "cwd": "/work/proj", "git_branch": "main", "git_commit": "abc123",
		"git_repository": "git@example.com:proj.git", "model": "gpt-5-codex", "model_provider": "openai",
		"originator": "codex_cli_rs", "version": "0.46.0",
	})
	requireSteps(t, tr.Steps, []domain.Step{
		{Role: domain.RoleSystem, Content: "<permissions instructions>sandboxed</permissions instructions>", Metadata: cxMeta("01", "original_role", "developer")},
		{Role: domain.RoleSystem, Content: "<environment_context>\n  <cwd>/work/proj</cwd>\n</environment_context>", Metadata: cxMeta("01", "original_role", "user")},
		// The event_msg user_message duplicate is skipped.
		{Role: domain.RoleUser, Content: "Fix the failing test.", Metadata: cxTS("02")},
		{Role: domain.RoleAssistant, Content: "**Running tests**", Metadata: cxMeta("03", "thinking", true)},
		{Role: domain.RoleAssistant, ToolName: "shell", ToolCallID: "call_A",
			ToolInput: map[string]any{"command": []string{"bash", "-lc", "go test ./..."}, "workdir": "/work/proj"}, Metadata: cxTS("04")},
		{Role: domain.RoleTool, Content: "FAIL: TestAdd\n", ToolName: "shell", ToolCallID: "call_A",
			Metadata: cxMeta("05", "output_metadata", map[string]any{"exit_code": 1, "duration_seconds": 0.5})},
		// Encrypted-only reasoning adds nothing.
		{Role: domain.RoleAssistant, ToolName: "apply_patch", ToolCallID: "call_B",
			ToolInput: map[string]any{"input": "*** Begin Patch\n*** Update File: add.go\n*** End Patch"}, Metadata: cxTS("07")},
		{Role: domain.RoleTool, Content: "Success. Updated: add.go\n", ToolName: "apply_patch", ToolCallID: "call_B",
			Metadata: cxMeta("08", "output_metadata", map[string]any{"exit_code": 0})},
		{Role: domain.RoleAssistant, ToolName: "local_shell", ToolCallID: "call_C",
			ToolInput: map[string]any{"type": "exec", "command": []string{"go", "test", "./..."}}, Metadata: cxTS("09")},
		{Role: domain.RoleTool, Content: "ok proj 0.1s", ToolName: "local_shell", ToolCallID: "call_C", Metadata: cxTS("10")},
		{Role: domain.RoleAssistant, ToolName: "web_search", ToolInput: map[string]any{"type": "search", "query": "go test flags"}, Metadata: cxTS("11")},
		{Role: domain.RoleAssistant, Content: "Fixed: TestAdd passes now.", Metadata: cxTS("13")},
		{Role: domain.RoleSystem, Content: "Summary: fixed TestAdd in add.go.", Metadata: cxMeta("15", "compacted", true)},
		{Role: domain.RoleUser, Content: "Thanks!", Metadata: cxTS("16")},
	})
}

func TestCodexLegacy(t *testing.T) {
	tr := mustParse(t, Codex{}, readTestdata(t, "codex_legacy.jsonl"))[0]
	if tr.ExternalID != "legacy-sess" {
		t.Fatalf("id = %q", tr.ExternalID)
	}
	requireJSONEqual(t, tr.Metadata, map[string]any{
		"agent": "codex", "git_branch": "dev", "git_commit": "def456", "instructions": "Prefer small diffs.",
	})
	requireSteps(t, tr.Steps, []domain.Step{
		{Role: domain.RoleUser, Content: "What files are here?"},
		{Role: domain.RoleAssistant, Content: "List the directory.", Metadata: map[string]any{"thinking": true}},
		{Role: domain.RoleAssistant, ToolName: "shell", ToolCallID: "call_1", ToolInput: map[string]any{"command": []string{"ls"}}},
		{Role: domain.RoleTool, Content: "ls: permission denied", ToolName: "shell", ToolCallID: "call_1", Metadata: map[string]any{"is_error": true}},
		{Role: domain.RoleAssistant, Content: "I could not list the directory."},
	})
}

func TestCodexEventsOnly(t *testing.T) {
	tr := mustParse(t, Codex{}, readTestdata(t, "codex_events_only.jsonl"))[0]
	requireSteps(t, tr.Steps, []domain.Step{
		{Role: domain.RoleUser, Content: "inspect", Metadata: cxTS("02")},
		{Role: domain.RoleAssistant, ToolName: "exec_command", ToolCallID: "call-1", ToolInput: map[string]any{"cmd": "pwd"}, Metadata: cxTS("03")},
		{Role: domain.RoleTool, Content: "/w\n", ToolName: "exec_command", ToolCallID: "call-1", Metadata: cxTS("04")},
		{Role: domain.RoleAssistant, Content: "done", Metadata: cxTS("05")},
	})
}

func TestCodexOutputs(t *testing.T) {
	call := `{"type":"response_item","payload":{"type":"function_call","name":"f","call_id":"c","arguments":"[1,2]"}}`
	cases := []struct {
		name   string
		output string
		want   domain.Step
	}{
		{"plain string", `"hello"`, domain.Step{Role: domain.RoleTool, Content: "hello", ToolName: "f", ToolCallID: "c"}},
		{"JSON text that is not the exec shape stays as text", `"{\"a\":1}"`, domain.Step{Role: domain.RoleTool, Content: `{"a":1}`, ToolName: "f", ToolCallID: "c"}},
		{"content items", `[{"type":"input_text","text":"see"},{"type":"input_image","image_url":"data:"}]`, domain.Step{Role: domain.RoleTool, Content: "see\n[image]", ToolName: "f", ToolCallID: "c"}},
		{"null", `null`, domain.Step{Role: domain.RoleTool, ToolName: "f", ToolCallID: "c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := `{"type":"session_meta","payload":{"id":"x"}}` + "\n" +
				`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}` + "\n" + call + "\n" +
				`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":` + c.output + `}}`
			tr := mustParse(t, Codex{}, []byte(in))[0]
			requireSteps(t, tr.Steps, []domain.Step{
				{Role: domain.RoleUser, Content: "go"},
				{Role: domain.RoleAssistant, ToolName: "f", ToolCallID: "c", ToolInput: map[string]any{"_raw": "[1,2]"}},
				c.want,
			})
		})
	}
}

func TestCodexErrors(t *testing.T) {
	meta := `{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x"}}`
	user := `{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}`
	cases := []struct {
		name  string
		in    string
		line  int
		field string
	}{
		{"malformed JSON on line 3", meta + "\n" + user + "\n" + `{"type":"response_item","payload":{` + "\n", 3, ""},
		{"unknown role", meta + "\n" + `{"type":"response_item","payload":{"type":"message","role":"critic","content":[]}}`, 2, "payload.role"},
		{"non-string non-array content", meta + "\n" + `{"type":"response_item","payload":{"type":"message","role":"user","content":{"a":1}}}`, 2, "payload.content"},
		{"only system", meta + "\n" + `{"type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]}}`, 0, "steps"},
		{"bad timestamp", meta + "\n" + `{"timestamp":"nope","type":"response_item","payload":{}}`, 2, "timestamp"},
		{"payload not an object", `{"type":"response_item","payload":[1]}`, 1, "payload"},
		{"line not an object", meta + "\n[1]", 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traces, err := Codex{}.Parse([]byte(c.in))
			if traces != nil {
				t.Fatalf("traces returned with an error")
			}
			requireInvalid(t, err, c.line, c.field)
		})
	}
}

func TestCodexDetect(t *testing.T) {
	cases := []struct {
		in   string
		want bool
	}{
		{`{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}`, true},
		{`{"timestamp":"t","type":"response_item","payload":{"type":"message"}}`, true},
		{`{"id":"x","timestamp":"t","instructions":null}`, true},
		{`{"id":"x","timestamp":"t"}` + "\n" + `{"record_type":"state"}`, true},
		{`{"id":"x","timestamp":"t"}` + "\n" + `{"type":"message","role":"user","content":[]}`, true},
		// Shapes of other formats.
		{`{"id":"x","timestamp":"t","observations":[],"instructions":1}`, false},
		{`{"id":"x","timestamp":"t"}`, false},
		{`{"type":"user","sessionId":"s","message":{}}`, false},
		{`{"messages":[{"role":"user","content":"hi"}]}`, false},
		{`{"resourceSpans":[]}`, false},
	}
	for _, c := range cases {
		if got := (Codex{}).Detect([]byte(c.in)); got != c.want {
			t.Errorf("Detect(%s) = %v, want %v", c.in, got, c.want)
		}
	}
}

func FuzzCodex(f *testing.F) {
	f.Add(readTestdata(f, "codex.jsonl"))
	f.Add(readTestdata(f, "codex_legacy.jsonl"))
	f.Add(readTestdata(f, "codex_events_only.jsonl"))
	f.Fuzz(func(t *testing.T, data []byte) { parseInvariants(t, Codex{}, data) })
}

// TestCodexRefusesUnresolvedHistoryBasePage: a page that names a
// history_base holds only the records after its base, so the trace API
// rejects it instead of storing an incomplete conversation (spec 001).
func TestCodexRefusesUnresolvedHistoryBasePage(t *testing.T) {
	page := `{"timestamp":"2026-09-11T08:10:00Z","type":"session_meta","ordinal":5,"payload":{"id":"0199f0c1-aaaa-7bbb-8ccc-000000000002","history_mode":"paginated","history_base":{"thread_id":"0199f0c1-aaaa-7bbb-8ccc-000000000001","end_ordinal_exclusive":5,"end_byte_offset":812}}}
{"timestamp":"2026-09-11T08:10:01Z","type":"response_item","ordinal":6,"payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fork question"}]}}
`
	_, err := Codex{}.Parse([]byte(page))
	var ve *domain.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, 1, ve.Line)
	require.Equal(t, "payload.history_base", ve.Field)
	require.Contains(t, ve.Message, "0199f0c1-aaaa-7bbb-8ccc-000000000001")
	require.Contains(t, ve.Message, "critic sessions sync")

	// The same page with its history resolved (the base's records inline,
	// history_base renamed by the client) imports.
	resolved := strings.Replace(page, `"history_base"`, `"resolved_history_base"`, 1)
	traces, err := Codex{}.Parse([]byte(resolved))
	require.NoError(t, err)
	require.Equal(t, "0199f0c1-aaaa-7bbb-8ccc-000000000002", traces[0].ExternalID)
}

// TestCodex0171BaseInstructions: Codex 0.171 keeps the system prompt in
// session_meta.base_instructions ({"text": …}); it is the trace's first
// step, before the prompt, as a string spelling is too.
func TestCodex0171BaseInstructions(t *testing.T) {
	tr := mustParse(t, Codex{}, readTestdata(t, "codex_0171.jsonl"))[0]
	if tr.ExternalID != "019c2f4e-7a31-7d20-9b1e-5f0a2c3d4e5f" || tr.Metadata["version"] != "0.171.0" || tr.Metadata["model"] != "gpt-5.3-codex" {
		t.Fatalf("id/metadata = %q %v", tr.ExternalID, tr.Metadata)
	}
	first := tr.Steps[0]
	if first.Role != domain.RoleSystem || first.Content != "You are Codex, a coding agent running in a terminal. Keep changes small and run the tests." || first.Metadata["base_instructions"] != true {
		t.Fatalf("first step = %+v", first)
	}
	var user []string
	for _, s := range tr.Steps {
		if s.Role == domain.RoleUser {
			user = append(user, s.Content)
		}
	}
	requireJSONEqual(t, user, []string{"Why is the cart total off by one cent?"})

	str := `{"timestamp":"2026-05-12T09:30:00Z","type":"session_meta","payload":{"id":"s2","cli_version":"0.171.0","base_instructions":"Be brief."}}` + "\n" +
		`{"timestamp":"2026-05-12T09:30:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`
	steps := mustParse(t, Codex{}, []byte(str))[0].Steps
	if len(steps) != 2 || steps[0].Role != domain.RoleSystem || steps[0].Content != "Be brief." || steps[1].Content != "hi" {
		t.Fatalf("string base_instructions: %+v", steps)
	}
}
