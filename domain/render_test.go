package domain

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// RenderTrace renders a whole trace: the text of a trace-level target.
func RenderTrace(steps []PairStep) string {
	return RenderUpTo(steps, len(steps)-1)
}

// refundTrace is spec 001's canonical example trace.
func refundTrace() PairTrace {
	return PairTrace{ID: "t1", Steps: []PairStep{
		{ID: "t1-0", Role: RoleSystem, Content: "You are a support agent..."},
		{ID: "t1-1", Role: RoleUser, Content: "I want a refund for order 1182"},
		{ID: "t1-2", Role: RoleAssistant, ToolName: "lookup_order", ToolInput: map[string]any{"order_id": "1182"}},
		{ID: "t1-3", Role: RoleTool, Content: `{"status": "delivered"}`, ToolName: "lookup_order"},
		{ID: "t1-4", Role: RoleAssistant, Content: "Your order was delivered on..."},
	}}
}

const refundFull = "user: I want a refund for order 1182\n" +
	"assistant: [tool_call] lookup_order({\"order_id\":\"1182\"})\n" +
	"tool: {\"status\": \"delivered\"}\n" +
	"assistant: Your order was delivered on..."

const refundUpToCall = "user: I want a refund for order 1182\n" +
	"assistant: [tool_call] lookup_order({\"order_id\":\"1182\"})"

func TestRender(t *testing.T) {
	t.Parallel()
	steps := refundTrace().Steps
	for _, tc := range []struct {
		name  string
		steps []PairStep
		upTo  int
		want  string
	}{
		{"whole trace omits the system step", steps, len(steps) - 1, refundFull},
		{"a step target ends at the step", steps, 2, refundUpToCall},
		{"a system step alone renders nothing", steps, 0, ""},
		{"first user step", steps, 1, "user: I want a refund for order 1182"},
		{"past the end renders all", steps, 99, refundFull},
		{"before the start renders nothing", steps, -1, ""},
		{"tool call with prose, nested input, keys sorted, no HTML escaping", []PairStep{
			{Role: RoleAssistant, Content: "Let me check.", ToolName: "search",
				ToolInput: map[string]any{"z": 1, "a": map[string]any{"y": "<x> & y", "b": []any{1, "two"}}}},
		}, 0, "assistant: Let me check.\n[tool_call] search({\"a\":{\"b\":[1,\"two\"],\"y\":\"<x> & y\"},\"z\":1})"},
		{"tool call without input", []PairStep{{Role: RoleAssistant, ToolName: "now"}}, 0, "assistant: [tool_call] now({})"},
		{"a tool name on a non-assistant step is not a call", []PairStep{{Role: RoleTool, ToolName: "now", Content: "12:00"}}, 0, "tool: 12:00"},
		{"empty content keeps the role", []PairStep{{Role: RoleUser}, {Role: RoleAssistant, Content: "ok"}}, 1, "user: \nassistant: ok"},
	} {
		require.Equal(t, tc.want, RenderUpTo(tc.steps, tc.upTo), tc.name)
	}
	require.Equal(t, refundFull, RenderTrace(steps))
	require.Equal(t, "", RenderTrace(nil))
}
