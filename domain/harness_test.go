package domain

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultTitleSkipsHarnessSteps(t *testing.T) {
	steps := []Step{
		{Role: RoleUser, Content: "<command-name>/clear</command-name>", Metadata: map[string]any{"harness": true, "harness_kind": "command"}},
		{Role: RoleUser, Content: "Fix the flaky migration test"},
		{Role: RoleAssistant, Content: "On it."},
	}
	require.Equal(t, "Fix the flaky migration test", DefaultTitle(steps))
	require.True(t, steps[0].IsHarness())
	require.False(t, steps[1].IsHarness())
}
