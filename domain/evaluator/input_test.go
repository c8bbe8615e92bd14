package evaluator_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
)

func step(id string, role domain.Role, content, tool string) events.StepRecord {
	st := events.StepRecord{ID: id, Step: domain.Step{Role: role, Content: content, ToolName: tool}}
	if tool != "" {
		st.ToolInput = map[string]any{"order": "1182"}
	}
	return st
}

// TestActionInputs: every assistant response and tool call is an input,
// with the system instructions and metadata.evaluation_context ahead of
// its prior context, and nothing that came after it.
func TestActionInputs(t *testing.T) {
	t.Parallel()
	s := traces.State{ID: "t", Exists: true, Metadata: map[string]any{"evaluation_context": map[string]any{"tools": []any{"lookup"}, "task": "refund <=30 days"}},
		Steps: []events.StepRecord{
			step("s0", domain.RoleSystem, "Follow the refund policy.", ""),
			step("s1", domain.RoleUser, "Refund order 1182", ""),
			step("s2", domain.RoleAssistant, "", "lookup"),
			step("s3", domain.RoleTool, "delivered 40 days ago", ""),
			step("s4", domain.RoleAssistant, "Sorry, it is past 30 days.", ""),
			step("s5", domain.RoleUser, "ok", ""),
		}}
	in := evaluator.ActionInputs(s)
	require.Len(t, in, 2, "the tool call and the response; user, system and tool steps are observations")
	prefix := "system: Follow the refund policy.\nevaluation_context: {\"task\":\"refund <=30 days\",\"tools\":[\"lookup\"]}\n"
	require.Equal(t, "s2", in[0].StepID)
	require.Equal(t, prefix+"user: Refund order 1182\nassistant: [tool_call] lookup({\"order\":\"1182\"})", in[0].Text)
	require.Equal(t, "s4", in[1].StepID)
	require.Equal(t, prefix+"user: Refund order 1182\nassistant: [tool_call] lookup({\"order\":\"1182\"})\ntool: delivered 40 days ago\nassistant: Sorry, it is past 30 days.", in[1].Text)
	require.NotContains(t, in[1].Text, "user: ok", "later steps never leak into an action's input")

	s.Metadata = map[string]any{"evaluation_context": "  plain text  "}
	require.Equal(t, "system: Follow the refund policy.\nevaluation_context: plain text\nuser: Refund order 1182\nassistant: [tool_call] lookup({\"order\":\"1182\"})", evaluator.ActionInputs(s)[0].Text)
	s.Metadata, s.Steps[0].Role = nil, domain.RoleUser
	require.Equal(t, "user: Follow the refund policy.\nuser: Refund order 1182\nassistant: [tool_call] lookup({\"order\":\"1182\"})", evaluator.ActionInputs(s)[0].Text)
}
