package client

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEditCodexConfigChainsAndRestoresTheUsersNotify(t *testing.T) {
	t.Parallel()
	orig := "model = \"gpt-5-codex\"\nnotify = [\n  \"notify-send\",\n  \"Codex\", # the desktop\n]\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nnotify = \"not top level\"\n"
	argv := []string{"/opt/critic dir/critic", "hooks", "run", "codex"}
	got, err := EditCodexConfig([]byte(orig), argv)
	require.NoError(t, err)
	s := string(got)
	require.True(t, CodexHookInstalled(got))
	require.Equal(t, []string{"notify-send", "Codex"}, CodexPreviousNotify(got))
	require.Contains(t, s, `notify = ["/opt/critic dir/critic","hooks","run","codex"]`)
	require.Equal(t, 1, strings.Count(s, "\nnotify = ["), "one top-level notify: the user's moved into the comment")
	require.Contains(t, s, "[mcp_servers.docs]\ncommand = \"docs-mcp\"\nnotify = \"not top level\"\n", "tables untouched")
	require.Less(t, strings.Index(s, "notify = [\"/opt"), strings.Index(s, "[mcp_servers"), "notify stays a top-level key")

	again, err := EditCodexConfig(got, argv)
	require.NoError(t, err)
	require.Equal(t, s, string(again), "installing twice changes nothing")

	back, err := EditCodexConfig(got, nil)
	require.NoError(t, err)
	require.False(t, CodexHookInstalled(back))
	require.Contains(t, string(back), `notify = [ "notify-send", "Codex", ]`, "the user's notify is back (comments inside it dropped)")
	require.Contains(t, string(back), "model = \"gpt-5-codex\"\n")

	fresh, err := EditCodexConfig(nil, argv)
	require.NoError(t, err)
	require.Nil(t, CodexPreviousNotify(fresh))
	empty, err := EditCodexConfig(fresh, nil)
	require.NoError(t, err)
	require.Equal(t, "", string(empty))
}

func TestEditClaudeSettingsKeepsOtherHooks(t *testing.T) {
	t.Parallel()
	orig := `{
  "model": "opus",
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit-bash"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 5}]}]
  },
  "permissions": {"allow": ["Bash(go test:*)"]}
}`
	cmd := "/usr/local/bin/critic hooks run claude-code"
	got, err := EditClaudeSettings([]byte(orig), cmd)
	require.NoError(t, err)
	require.Equal(t, []string{"SessionEnd", "Stop"}, ClaudeHookInstalled(got))
	var s map[string]any
	require.NoError(t, json.Unmarshal(got, &s))
	require.Equal(t, "opus", s["model"])
	hooks := s["hooks"].(map[string]any)
	require.Equal(t, []any{map[string]any{"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": "audit-bash"}}}}, hooks["PreToolUse"])
	stop := hooks["Stop"].([]any)
	require.Len(t, stop, 2)
	require.Equal(t, map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "say done", "timeout": float64(5)}}}, stop[0])
	require.Equal(t, cmd, stop[1].(map[string]any)["hooks"].([]any)[0].(map[string]any)["command"])
	require.Less(t, strings.Index(string(got), `"model"`), strings.Index(string(got), `"permissions"`), "key order kept")

	again, err := EditClaudeSettings(got, cmd)
	require.NoError(t, err)
	require.Equal(t, string(got), string(again), "installing twice changes nothing")

	back, err := EditClaudeSettings(got, "")
	require.NoError(t, err)
	require.Empty(t, ClaudeHookInstalled(back))
	var b, o map[string]any
	require.NoError(t, json.Unmarshal(back, &b))
	require.NoError(t, json.Unmarshal([]byte(orig), &o))
	require.Equal(t, o, b, "uninstall gives back the original settings")

	_, err = EditClaudeSettings([]byte(`{"hooks": [1]}`), cmd)
	require.ErrorContains(t, err, "not an object")
}

// TestEditClaudeSettingsKeepsEveryOtherByte: the user's settings (commands
// with &&, > and <, unicode, tabs and three-space indentation, their own
// Stop and SessionEnd hooks) come back byte for byte after install and
// uninstall; install only adds Critic's entries, unescaped.
func TestEditClaudeSettingsKeepsEveryOtherByte(t *testing.T) {
	t.Parallel()
	cmd := "'/opt/critic dir/critic' hooks run claude-code"
	cases := map[string]string{
		"tabs, existing Stop and SessionEnd": "{\n\t\"model\": \"opus\",\n\t\"statusLine\": {\"type\": \"command\", \"command\": \"git status --short | wc -l > /tmp/n && echo ✓ < /dev/null\"},\n\t\"hooks\": {\n\t\t\"Stop\": [\n\t\t\t{\"hooks\": [{\"type\": \"command\", \"command\": \"make lint && say 'fertig — ok' > /dev/null\"}]}\n\t\t],\n\t\t\"SessionEnd\": [{\"matcher\": \"\", \"hooks\": [ {\"type\":\"command\",\"command\":\"a && b > c < d\"} ]}]\n\t}\n}\n",
		"three spaces, no hooks yet":         "{\n   \"env\": {\"GREETING\": \"héllo <wörld> & co\"},\n   \"permissions\": {\n      \"allow\": [\"Bash(npm run test:*)\"]\n   }\n}",
		"hooks with other events only":       "{\"hooks\":{\"PreToolUse\":[{\"matcher\":\"Bash\",\"hooks\":[{\"type\":\"command\",\"command\":\"x && y\"}]}]}}",
		"empty object":                       "{}",
	}
	for name, orig := range cases {
		got, err := EditClaudeSettings([]byte(orig), cmd)
		require.NoError(t, err, name)
		require.Equal(t, []string{"SessionEnd", "Stop"}, ClaudeHookInstalled(got), name)
		require.True(t, json.Valid(got), "%s:\n%s", name, got)
		require.NotContains(t, string(got), `\u00`, name)
		for _, s := range []string{"&&", " > ", "✓", "héllo <wörld> & co", "'fertig — ok'", "a && b > c < d"} {
			require.Equal(t, strings.Count(orig, s), strings.Count(string(got), s), "%s: %q", name, s)
		}
		again, err := EditClaudeSettings(got, cmd)
		require.NoError(t, err, name)
		require.Equal(t, string(got), string(again), "%s: installing twice changes nothing", name)
		back, err := EditClaudeSettings(got, "")
		require.NoError(t, err, name)
		require.Equal(t, orig, string(back), "%s: uninstall gives back the same bytes", name)
	}
	tabs, _ := EditClaudeSettings([]byte(cases["tabs, existing Stop and SessionEnd"]), cmd)
	require.Contains(t, string(tabs), "\n\t\t\t{\"hooks\": [{\"type\": \"command\", \"command\": \"make lint && say 'fertig — ok' > /dev/null\"}]},\n\t\t\t{\n\t\t\t\t\"hooks\": [", "the user's Stop group untouched, Critic's appended in the file's indentation")
}
