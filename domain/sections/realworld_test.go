package sections

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/domain/labels"
)

// TestRealClaudeCodeSession sections a real Claude Code session (a public
// fixture next to the checkout; skipped when absent): its request and the
// two stop-hook follow-ups are the tasks, and the work inside them splits
// where it changes between inspecting, editing, verifying and committing.
func TestRealClaudeCodeSession(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "fixtures", "claude-code", "claude-reliability_coverage-test-fix_transcript.jsonl"))
	if err != nil {
		t.Skip("../shared/fixtures is not here")
	}
	trs, err := formats.Auto{}.Parse(b)
	require.NoError(t, err)
	steps := trs[0].Steps
	got := Build(steps, ids(len(steps)), labels.Labeling{})
	require.Len(t, got, 3)
	require.Contains(t, got[0].Title, "multiply_numbers")
	require.Equal(t, len(steps)-1, got[2].LastIndex, "the tasks cover the whole trace")
	for i := 1; i < len(got); i++ {
		require.Equal(t, got[i-1].LastIndex+1, got[i].FirstIndex, "tasks partition the trace")
	}
	var acts []string
	for _, p := range got[1].Children {
		acts = append(acts, *p.Activity)
	}
	require.Equal(t, []string{ActivityInspect, ActivityVerify, ActivityPublish}, acts)
}
