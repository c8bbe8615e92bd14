package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/platform/pg/pgtest"
)

// TestReviewWorkbench runs web/e2e/workbench.spec.ts in Chromium against
// the real binary: a reviewer's typing, clicks and keys write exactly the
// labels they meant (checked through the API), and agent actions are shown
// as they happened (verbatim text, diffs, thinking, harness, errors). Its
// own account and traces; no worker is needed.
func TestReviewWorkbench(t *testing.T) {
	webDir := requireBrowser(t)

	in := startServe(t)
	key := in.newUser("workbench", false)
	ids := in.importTraces(key, "stash", strings.Join([]string{workbenchIntegrityTrace, workbenchActionsTrace(t)}, "\n"))
	require.Len(t, ids, 2)

	// The real Claude Code session in ../shared/fixtures (hook feedback,
	// Edit calls), when this checkout has it, on an account of its own so
	// the first account's queue holds exactly the two traces above.
	var claude, claudeKey string
	if raw, err := os.ReadFile(filepath.Join(pgtest.ModuleRoot(t), "..", "shared", "fixtures", "claude-code", "claude-reliability_coverage-test-fix_transcript.jsonl")); err == nil {
		claudeKey = in.newUser("workbench-claude", false)
		claude = in.importTraces(claudeKey, "claude_code", string(raw))[0]
	}

	require.Greater(t, runSpec(t, webDir, "workbench", "workbench.spec.ts", in.url, key, "CRITIC_E2E_WORKBENCH_TRACE="+ids[0], "CRITIC_E2E_ACTIONS_TRACE="+ids[1], "CRITIC_E2E_CLAUDE_TRACE="+claude, "CRITIC_E2E_CLAUDE_KEY="+claudeKey), 0, "no browser test ran")
}

// workbenchIntegrityTrace: four steps to rate and comment on.
const workbenchIntegrityTrace = `{"title":"Workbench: labels","steps":[{"role":"user","content":"Where does the cache live?"},` +
	`{"role":"assistant","content":"In ~/.cache, I think."},{"role":"assistant","content":"It is configurable with XDG_CACHE_HOME."},` +
	`{"role":"assistant","content":"So: $XDG_CACHE_HOME or ~/.cache."}]}`

// workbenchActionsTrace is a coding-agent session as the importers record
// it: user text that Markdown would mangle, thinking before a reply, a
// Claude Code Edit, a failed command, hook feedback (isMeta) and prose; and
// what the SDKs record about the LLM calls (issue 32): the model and token
// usage on the steps a call produced (steps 3 and 4 are one call, step 6
// another) and the tools the agent was given on the trace.
func workbenchActionsTrace(t *testing.T) string {
	firstCall := map[string]any{"model": "gpt-4o-mini", "usage": map[string]any{"input_tokens": 812, "output_tokens": 96, "cached_tokens": 512}}
	steps := []map[string]any{
		{"role": "user", "content": "Clean the repo:\n  remove __pycache__/ and *.pyc\n    but keep setup.py"},
		{"role": "assistant", "content": "The user wants the build droppings gone; check .gitignore first.", "metadata": map[string]any{"thinking": true}},
		{"role": "assistant", "content": "I'll fix the version first.", "metadata": firstCall},
		{"role": "assistant", "content": "", "tool_name": "Edit", "tool_call_id": "toolu_1", "metadata": firstCall,
			"tool_input": map[string]any{"file_path": "/repo/app.py", "old_string": "def version():\n    return 1\n", "new_string": "def version():\n    return 2\n"}},
		{"role": "tool", "content": "The file /repo/app.py has been updated.", "tool_name": "Edit", "tool_call_id": "toolu_1"},
		{"role": "assistant", "content": "", "tool_name": "Bash", "tool_call_id": "toolu_2", "tool_input": map[string]any{"command": "rm -r __pycache__/ *.pyc"},
			"metadata": map[string]any{"model": "gpt-4o-mini", "usage": map[string]any{"input_tokens": 1204, "output_tokens": 40, "total_tokens": 1244}}},
		{"role": "tool", "content": "rm: cannot remove '*.pyc': No such file or directory\n    (exit 1)", "tool_name": "Bash", "tool_call_id": "toolu_2", "metadata": map[string]any{"is_error": true}},
		{"role": "user", "content": "Stop hook feedback:\n- run the tests before finishing", "metadata": map[string]any{"meta": true}},
		{"role": "assistant", "content": "Done: **version 2**, caches removed."},
	}
	tools := []any{
		map[string]any{"type": "function", "name": "Edit", "description": "Replace a string in a file",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"file_path": map[string]any{"type": "string"}}, "required": []string{"file_path"}}},
		map[string]any{"type": "function", "name": "Bash", "description": "Run a shell command"},
	}
	raw, err := json.Marshal(map[string]any{"title": "Workbench: agent actions", "metadata": map[string]any{"tools": tools}, "steps": steps})
	require.NoError(t, err)
	return string(raw)
}
