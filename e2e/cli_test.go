package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/stretchr/testify/require"
)

// clientEnv is a user's machine for the client commands: its own home (so
// ~/.claude, ~/.codex and the client's config live in a temp dir) and no
// inherited server settings.
type clientEnv struct {
	t    *testing.T
	bin  string
	home string
	env  []string
}

func newClientEnv(t *testing.T, extra ...string) *clientEnv {
	home := t.TempDir()
	c := &clientEnv{t: t, bin: criticBin(t), home: home}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "XDG_CONFIG_HOME", "CRITIC_URL", "CRITIC_API_KEY", "CRITIC_CONFIG_DIR", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "DATABASE_URL":
			continue
		}
		c.env = append(c.env, kv)
	}
	c.env = append(c.env, "HOME="+home)
	c.env = append(c.env, extra...)
	return c
}

// run runs the binary; it returns the combined output and the exit code.
func (c *clientEnv) run(stdin string, args ...string) (string, int) {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.env
	cmd.Dir = c.home
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(c.t, err)
	}
	return string(out), code
}

// with returns a copy with more environment.
func (c *clientEnv) with(kv ...string) *clientEnv {
	d := *c
	d.env = append(append([]string{}, c.env...), kv...)
	return &d
}

func (c *clientEnv) write(rel, content string) string {
	p := filepath.Join(c.home, rel)
	require.NoError(c.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(c.t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func (in *instance) traceTotal(t *testing.T, key string) int {
	r := in.do("GET", "/api/v1/rm/traces?limit=1000", key, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	return int(r.JSON(t)["total"].(float64))
}

func (in *instance) traceByExternalID(t *testing.T, key, ext string) (traceDetail, bool) {
	r := in.do("GET", "/api/v1/rm/traces?limit=1000", key, nil)
	require.Equal(t, http.StatusOK, r.Status)
	for _, s := range r.JSON(t)["traces"].([]any) {
		m := s.(map[string]any)
		if m["external_id"] == ext {
			return in.getTrace(t, key, m["id"].(string)), true
		}
	}
	return traceDetail{}, false
}

func stashLine(id string, role string, i int) string {
	return fmt.Sprintf(`{"id":%q,"steps":[{"role":"user","content":"question %d: why is the cart total off by one cent?"},{"role":%q,"content":"answer %d: rounding happens before the coupon."}]}`, id, i, role, i)
}

// TestImportFolderWithABrokenFile imports a folder of mixed formats the
// way a user would: one file is broken, the command exits non-zero, every
// other file is imported, and the failure names the file, the line and the
// field. A large file goes up in several requests under the limit without
// splitting a trace, and a failure in a later request still names the
// file's own line.
func TestImportFolderWithABrokenFile(t *testing.T) {
	in := startServe(t)
	key := in.newUser("importer", false)
	c := newClientEnv(t)

	// Login stores the server and the key, privately.
	out, code := c.run(key+"\n", "login", "--url", in.url)
	require.Equal(t, 0, code, out)
	cfg := filepath.Join(c.home, ".config", "critic", "config.json")
	st, err := os.Stat(cfg)
	require.NoError(t, err, out)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	out, code = c.run("wrong-key\n", "login", "--url", in.url)
	require.NotEqual(t, 0, code, "a key the server refuses is not stored")
	require.Contains(t, out, "did not accept")

	var stash []string
	for i := range 3 {
		stash = append(stash, stashLine(fmt.Sprintf("mixed-%d", i), "assistant", i))
	}
	c.write("exports/stash.jsonl", strings.Join(stash, "\n")+"\n")
	c.write("exports/openai/finetune.jsonl",
		`{"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"2+2?"},{"role":"assistant","content":"4"}]}`+"\n"+
			`{"messages":[{"role":"user","content":"capital of France?"},{"role":"assistant","content":"Paris"}]}`+"\n")
	c.write("exports/anthropic.ndjson", `{"system":"be brief","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"hello"}]}]}`+"\n")
	c.write("exports/sessions/7d3f1c2e.jsonl", sessionFile(claudeCodeSession("7d3f1c2e-1111-4c6d-9e0f-1a2b3c4d5e6f", 2, nil)))
	c.write("exports/sessions/2025/10/29/rollout-2025-10-29T00-59-00-0199a3c4-1111-7b90-a1d2-3c4d5e6f7a8b.jsonl",
		sessionFile(codexRollout("0199a3c4-1111-7b90-a1d2-3c4d5e6f7a8b", 2)))
	broken := []string{stashLine("broken-0", "assistant", 0), stashLine("broken-1", "assistant", 1), stashLine("broken-2", "robot", 2)}
	c.write("exports/broken.jsonl", strings.Join(broken, "\n")+"\n")
	c.write("exports/notes.txt", "not an export")

	// --dry-run needs no server and sends nothing.
	dry := newClientEnv(t)
	dry.home = c.home
	out, code = dry.run("", "import", "exports", "--dry-run")
	require.NotEqual(t, 0, code, out)
	require.Contains(t, out, "would import 5 file(s) (8 traces)")
	require.Contains(t, out, "exports/broken.jsonl: line 3")
	require.Equal(t, 0, in.traceTotal(t, key), "a dry run sends nothing")

	out, code = c.run("", "import", "exports")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "imported 5 file(s) (8 traces), unchanged 0, failed 1")
	require.Regexp(t, `exports/broken\.jsonl: line 3: field steps\[1\]\.role: `, out)
	require.NotContains(t, out, "notes.txt")
	require.Equal(t, 8, in.traceTotal(t, key), "every other file is imported; the broken one is not")
	d, ok := in.traceByExternalID(t, key, "7d3f1c2e-1111-4c6d-9e0f-1a2b3c4d5e6f")
	require.True(t, ok)
	require.Equal(t, "claude_code", d.SourceFormat)
	_, ok = in.traceByExternalID(t, key, "broken-0")
	require.False(t, ok, "a failed file stores none of its traces")

	// Again: every file is unchanged on the server (a session snapshot
	// that adds nothing, or the same canonical traces, is a no-op).
	out, code = c.run("", "import", "exports/stash.jsonl", "exports/sessions")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "imported 0 file(s) (0 traces), unchanged 3, failed 0")
	require.Contains(t, out, "unchanged  exports/sessions/7d3f1c2e.jsonl: 1 traces (claude_code)")
	require.Equal(t, 8, in.traceTotal(t, key))

	// A large file in small requests, with a broken line in a late one.
	var big []string
	for i := range 60 {
		role := "assistant"
		if i == 44 {
			role = "robot"
		}
		big = append(big, stashLine(fmt.Sprintf("big-%d", i), role, i))
	}
	bigPath := c.write("big/big.jsonl", strings.Join(big, "\n")+"\n")
	before := in.traceTotal(t, key)
	out, code = c.run("", "import", bigPath, "--max-request-bytes", "2048", "--source-id", "bulk")
	require.Equal(t, 1, code, out)
	require.Regexp(t, `big\.jsonl: line 45: field steps\[1\]\.role: `, out, "the file's own line, not the request's")
	imported := in.traceTotal(t, key) - before
	require.Greater(t, imported, 0, "the requests before the broken one went through")
	require.Less(t, imported, 45)

	big[44] = stashLine("big-44", "assistant", 44)
	require.NoError(t, os.WriteFile(bigPath, []byte(strings.Join(big, "\n")+"\n"), 0o644))
	out, code = c.run("", "import", bigPath, "--max-request-bytes", "2048", "--source-id", "bulk")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, fmt.Sprintf("imported   %s: 60 traces (stash)", bigPath))
	require.Equal(t, before+60, in.traceTotal(t, key))
	d, ok = in.traceByExternalID(t, key, "big-59")
	require.True(t, ok)
	require.Equal(t, "bulk", d.SourceID)

	// stdin.
	out, code = c.run(stashLine("from-stdin", "assistant", 1)+"\n", "import", "-")
	require.Equal(t, 0, code, out)
	_, ok = in.traceByExternalID(t, key, "from-stdin")
	require.True(t, ok)

	// Client commands never boot infrastructure (no local cluster, no
	// broker, no data directory where they ran).
	require.NoDirExists(t, filepath.Join(c.home, ".data"))

	// The server down: a clear error, non-zero.
	out, code = c.with("CRITIC_URL=http://127.0.0.1:1").run("", "import", "exports/stash.jsonl")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "cannot reach the Critic server at http://127.0.0.1:1")
}

// TestSessionsSyncGrowsAndReportsDivergence syncs a Claude Code session,
// lets it grow, syncs again (steps appended, ids and the review kept, an
// unchanged file skipped locally), then edits it in the middle: the sync
// reports trace_sync_error and the server copy stays as it was.
func TestSessionsSyncGrowsAndReportsDivergence(t *testing.T) {
	in := startServe(t)
	key := in.newUser("syncer", false)
	c := newClientEnv(t, "CRITIC_URL="+in.url, "CRITIC_API_KEY="+key)
	const sid = "5e6f7a8b-2222-4c6d-9e0f-1a2b3c4d5e6f"
	recs := claudeCodeSession(sid, 4, nil)
	n, k := len(recs)/2, len(recs)/4
	path := c.write(".claude/projects/-home-dev-shop/"+sid+".jsonl", sessionFile(recs[:n]))
	// Claude Code also leaves files of summary records only: no conversation.
	c.write(".claude/projects/-home-dev-shop/summaries.jsonl", `{"type":"summary","summary":"Fix cart totals","leafUuid":"00000001-7c1e-4d2a-9b3f-000000001eef"}`+"\n")

	out, code := c.run("", "sessions", "sync")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "synced     claude-code "+path)
	require.Contains(t, out, "sessions: 1 synced, 0 unchanged, 0 diverged, 0 failed, 1 without a conversation yet")
	d1, ok := in.traceByExternalID(t, key, sid)
	require.True(t, ok)
	requireSteps(t, wantSteps(recs[:n]), d1.Steps)
	ids1 := stepIDs(d1)
	r := in.do("POST", "/api/v1/rm/traces/"+d1.ID+"/annotations", key, map[string]any{"step_id": ids1[1], "rating": 1, "comment": "Read the file before editing."})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))

	// Nothing changed: skipped locally, nothing appended.
	events := in.eventCount()
	out, code = c.run("", "sessions", "sync")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "sessions: 0 synced, 2 unchanged")
	require.Equal(t, events, in.eventCount())

	// The session grows: appended, ids and the review kept.
	require.NoError(t, os.WriteFile(path, []byte(sessionFile(recs[:n+k])), 0o600))
	out, code = c.run("", "sessions", "sync")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "sessions: 1 synced")
	d2 := in.getTrace(t, key, d1.ID)
	requireSteps(t, wantSteps(recs[:n+k]), d2.Steps)
	require.Equal(t, ids1, stepIDs(d2)[:len(ids1)])
	require.Len(t, d2.Annotations, 1)

	// Edited in the middle: reported, the server copy untouched.
	edited := append([]sessionRecord(nil), recs[:n+k+2]...)
	mid := -1
	for i := 2; i < n; i++ {
		if e := strings.Replace(edited[i].line, "the checkout total is wrong", "the checkout total is right", 1); e != edited[i].line {
			edited[i].line, mid = e, i
			break
		}
	}
	require.GreaterOrEqual(t, mid, 0)
	require.NoError(t, os.WriteFile(path, []byte(sessionFile(edited)), 0o600))
	events = in.eventCount()
	out, code = c.run("", "sessions", "sync")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "diverged   claude-code "+path+": trace_sync_error: ")
	require.Contains(t, out, "sessions: 0 synced, 1 unchanged, 1 diverged, 0 failed")
	require.Equal(t, events, in.eventCount(), "nothing appended")
	d3 := in.getTrace(t, key, d1.ID)
	require.Equal(t, stepIDs(d2), stepIDs(d3))
	requireSteps(t, wantSteps(recs[:n+k]), d3.Steps)
	require.Len(t, d3.Annotations, 1)
	// Reported again on the next run (not hidden by the state file).
	out, _ = c.run("", "sessions", "sync")
	require.Contains(t, out, "1 diverged")
}

// TestSessionsSyncStopsOnAnErasedTrace: a synced session whose trace is
// then deleted on the server grows; the next sync reports it erased (not a
// failure: the exit is 0, other sessions sync) and stores nothing, and later
// syncs do not send it again.
func TestSessionsSyncStopsOnAnErasedTrace(t *testing.T) {
	in := startServe(t)
	key := in.newUser("erasing-syncer", false)
	c := newClientEnv(t, "CRITIC_URL="+in.url, "CRITIC_API_KEY="+key)
	const sid = "5e6f7a8b-3333-4c6d-9e0f-1a2b3c4d5e6f"
	recs := claudeCodeSession(sid, 4, nil)
	n := len(recs) / 2
	path := c.write(".claude/projects/-home-dev-shop/"+sid+".jsonl", sessionFile(recs[:n]))
	out, code := c.run("", "sessions", "sync")
	require.Equal(t, 0, code, out)
	d, ok := in.traceByExternalID(t, key, sid)
	require.True(t, ok)
	r := in.do("DELETE", "/api/v1/rm/traces/"+d.ID, key, nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Body))

	require.NoError(t, os.WriteFile(path, []byte(sessionFile(recs)), 0o600))
	events := in.eventCount()
	out, code = c.run("", "sessions", "sync")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "erased     claude-code "+path+": the server erased trace "+d.ID)
	require.Contains(t, out, "1 erased on the server (not sent again)")
	require.Equal(t, events, in.eventCount(), "nothing stored")
	_, ok = in.traceByExternalID(t, key, sid)
	require.False(t, ok)

	require.NoError(t, os.WriteFile(path, []byte(sessionFile(recs)+sessionFile(recs[:1])), 0o600))
	out, code = c.run("", "sessions", "sync")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "erased     claude-code", "not sent again")
	require.Contains(t, out, "sessions: 0 synced, 1 unchanged")
}

// TestSessionsSyncRebuildsCodexHistoryBasePages: a Codex fork whose
// rollout holds only its own records is uploaded with its base's history
// (exact byte and ordinal cut), the newest page only; a page whose base is
// missing fails with a clear message and nothing of it is stored.
func TestSessionsSyncRebuildsCodexHistoryBasePages(t *testing.T) {
	in := startServe(t)
	key := in.newUser("codexer", false)
	c := newClientEnv(t, "CRITIC_URL="+in.url, "CRITIC_API_KEY="+key)
	const parent, fork, orphan = "0199b000-3333-7b90-a1d2-00000000000a", "0199b000-3333-7b90-a1d2-00000000000b", "0199b000-3333-7b90-a1d2-00000000000c"
	line := func(typ string, ord int, payload map[string]any) string {
		return mustJSON(map[string]any{"timestamp": fmt.Sprintf("2026-09-11T08:00:%02dZ", ord), "type": typ, "ordinal": ord, "payload": payload}) + "\n"
	}
	meta := func(id string, ord int, base map[string]any) string {
		p := map[string]any{"id": id, "timestamp": "2026-09-11T08:00:00Z", "cwd": "/home/dev/shop", "originator": "codex_cli_rs", "cli_version": "0.154.0", "history_mode": "paginated"}
		if base != nil {
			p["history_base"] = base
		}
		return line("session_meta", ord, p)
	}
	msg := func(role, text string, ord int) string {
		kind := "input_text"
		if role == "assistant" {
			kind = "output_text"
		}
		return line("response_item", ord, map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": kind, "text": text}}})
	}
	p := meta(parent, 0, nil) + msg("user", "Rename Total to Sum.", 1) + msg("assistant", "Renamed in cart/total.go.", 2)
	cut := len(p)
	p += msg("user", "Now run the tests.", 3) + msg("assistant", "They pass.", 4)
	c.write(".codex/sessions/2026/09/11/rollout-2026-09-11T08-00-00-"+parent+".jsonl", p)
	f := meta(fork, 3, map[string]any{"thread_id": parent, "end_ordinal_exclusive": 3, "end_byte_offset": cut}) +
		msg("user", "Instead, rename it to Amount.", 4) + msg("assistant", "Renamed to Amount.", 5)
	c.write(".codex/sessions/2026/09/11/rollout-2026-09-11T08-10-00-"+fork+".jsonl", f)
	o := meta(orphan, 3, map[string]any{"thread_id": "0199b000-3333-7b90-a1d2-0000000000ff", "end_ordinal_exclusive": 3, "end_byte_offset": 100}) + msg("user", "lost", 4)
	c.write(".codex/sessions/2026/09/12/rollout-2026-09-12T08-10-00-"+orphan+".jsonl", o)

	out, code := c.run("", "sessions", "sync")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "sessions: 2 synced, 0 unchanged, 0 diverged, 1 failed")
	require.Contains(t, out, "0199b000-3333-7b90-a1d2-0000000000ff, which is not on disk (missing base)")
	d, ok := in.traceByExternalID(t, key, fork)
	require.True(t, ok)
	var got []string
	for _, s := range d.Steps {
		got = append(got, s["role"].(string)+": "+s["content"].(string))
	}
	require.Equal(t, []string{"user: Rename Total to Sum.", "assistant: Renamed in cart/total.go.", "user: Instead, rename it to Amount.", "assistant: Renamed to Amount."}, got)
	_, ok = in.traceByExternalID(t, key, orphan)
	require.False(t, ok)

	// The page on its own is refused by the trace API.
	r := in.do("POST", "/api/v1/me/transcripts", key, map[string]any{"data": f})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, string(r.Body))
	require.Equal(t, "payload.history_base", r.JSON(t)["field"])
}

// TestHookQueuesWhileTheServerIsDownThenSyncSendsIt installs the Claude
// Code hook into a settings.json that already has hooks (kept intact), runs
// the hook the way Claude Code does while the server is down (it returns at
// once, exit 0, and queues the upload), then a sync sends the queued
// session once the server is back.
func TestHookQueuesWhileTheServerIsDownThenSyncSendsIt(t *testing.T) {
	in := startServe(t)
	key := in.newUser("hooked", false)
	c := newClientEnv(t, "CRITIC_API_KEY="+key)
	orig := `{
  "model": "opus",
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit-bash"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]
  }
}
`
	settings := c.write(".claude/settings.json", orig)
	out, code := c.run("", "hooks", "install", "claude-code")
	require.Equal(t, 0, code, out)
	raw, err := os.ReadFile(settings)
	require.NoError(t, err)
	var s struct {
		Model string
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct{ Type, Command string }
		}
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	require.Equal(t, "opus", s.Model)
	require.Equal(t, "audit-bash", s.Hooks["PreToolUse"][0].Hooks[0].Command)
	require.Equal(t, "Bash", s.Hooks["PreToolUse"][0].Matcher)
	require.Equal(t, "say done", s.Hooks["Stop"][0].Hooks[0].Command)
	hookCmd := s.Hooks["Stop"][1].Hooks[0].Command
	require.Equal(t, c.bin+" hooks run claude-code", hookCmd)
	require.Equal(t, hookCmd, s.Hooks["SessionEnd"][0].Hooks[0].Command)
	out, _ = c.run("", "hooks", "status")
	require.Contains(t, out, "Claude Code: installed in "+settings+" (SessionEnd, Stop)")

	// The session to record, and the server going down.
	const sid = "9a8b7c6d-4444-4c6d-9e0f-1a2b3c4d5e6f"
	recs := claudeCodeSession(sid, 2, nil)
	transcript := c.write(".claude/projects/-home-dev-shop/"+sid+".jsonl", sessionFile(recs))
	deadURL := in.url
	in.stop()
	hook := c.with("CRITIC_URL=" + deadURL)
	input := mustJSON(map[string]any{"session_id": sid, "transcript_path": transcript, "cwd": "/home/dev/shop", "hook_event_name": "Stop", "stop_hook_active": false})
	cmd := exec.Command(c.bin, "hooks", "run", "claude-code")
	cmd.Env, cmd.Stdin = hook.env, strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "the hook never fails the agent")
	require.Empty(t, stdout.String(), "nothing on stdout: Claude Code would read it as a decision")
	require.Empty(t, stderr.String())

	// The detached uploader tries, finds the server down, keeps the upload.
	var status string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		status, _ = hook.run("", "hooks", "status")
		if strings.Contains(status, "unreachable") {
			break
		}
	}
	require.Contains(t, status, "queue:       1 upload(s) waiting", status)
	require.Contains(t, status, "claude-code "+transcript+": unreachable (cannot reach the Critic server at "+deadURL)

	// The server is back (at a new address); the next sync sends it.
	in.start()
	back := c.with("CRITIC_URL=" + in.url)
	out, code = back.run("", "sessions", "sync", "--claude-dir", filepath.Join(c.home, "elsewhere"))
	require.NotEqual(t, 0, code, "a folder that is not there is an error")
	require.Contains(t, out, "elsewhere is not a folder")
	require.NoError(t, os.Mkdir(filepath.Join(c.home, "elsewhere"), 0o755))
	// Only the queued session is sent (the folder to scan is empty).
	out, code = back.run("", "sessions", "sync", "--claude-dir", filepath.Join(c.home, "elsewhere"))
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "synced     claude-code "+transcript)
	d, ok := in.traceByExternalID(t, key, sid)
	require.True(t, ok)
	requireSteps(t, wantSteps(recs), d.Steps)
	status, _ = back.run("", "hooks", "status")
	require.Contains(t, status, "queue:       0 upload(s) waiting")
	require.Contains(t, status, "claude-code "+transcript+": synced")

	// Uninstall gives back the user's own hooks.
	out, code = c.run("", "hooks", "uninstall", "claude-code")
	require.Equal(t, 0, code, out)
	raw, err = os.ReadFile(settings)
	require.NoError(t, err)
	var got, want map[string]any
	require.NoError(t, json.Unmarshal(raw, &got))
	require.NoError(t, json.Unmarshal([]byte(orig), &want))
	require.Equal(t, want, got)
}

// TestCodexHookUploadsEachTurnAndKeepsTheUsersNotify installs the Codex
// notify hook over an existing notify program, which keeps running
// (chained); the hook Codex runs after a turn uploads that thread's rollout;
// uninstall restores the user's config byte for byte.
func TestCodexHookUploadsEachTurnAndKeepsTheUsersNotify(t *testing.T) {
	in := startServe(t)
	key := in.newUser("codex-hooked", false)
	c := newClientEnv(t, "CRITIC_URL="+in.url, "CRITIC_API_KEY="+key)
	marker := filepath.Join(c.home, "notified")
	script := c.write("bin/notify.sh", "#!/bin/sh\nprintf '%s' \"$1\" > "+marker+"\n")
	require.NoError(t, os.Chmod(script, 0o755))
	orig := "model = \"gpt-5-codex\"\nnotify = [\"" + script + "\"]\n\n[tui]\nnotifications = true\n"
	cfg := c.write(".codex/config.toml", orig)
	out, code := c.run("", "hooks", "install", "codex")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "your previous notify program ("+script+") is kept")
	raw, err := os.ReadFile(cfg)
	require.NoError(t, err)
	require.Contains(t, string(raw), `notify = ["`+c.bin+`","hooks","run","codex"]`)
	require.Contains(t, string(raw), "[tui]\nnotifications = true\n")
	out, _ = c.run("", "hooks", "status")
	require.Contains(t, out, "Codex:       installed in "+cfg)

	// A turn completes: Codex runs the hook with its JSON notification.
	const thread = "0199c000-5555-7b90-a1d2-000000000001"
	recs := codexRollout(thread, 2)
	rollout := c.write(".codex/sessions/2025/10/29/rollout-2025-10-29T00-59-00-"+thread+".jsonl", sessionFile(recs))
	note := `{"type":"agent-turn-complete","thread-id":"` + thread + `","turn-id":"1","cwd":"/home/dev/shop"}`
	out, code = c.run("", "hooks", "run", "codex", note)
	require.Equal(t, 0, code, out)
	require.Empty(t, out)
	var status string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		status, _ = c.run("", "hooks", "status")
		if strings.Contains(status, ": synced") {
			break
		}
	}
	require.Contains(t, status, "codex "+rollout+": synced", status)
	require.Contains(t, status, "queue:       0 upload(s) waiting")
	d, ok := in.traceByExternalID(t, key, thread)
	require.True(t, ok)
	requireSteps(t, wantSteps(recs), d.Steps)
	var got []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got, _ = os.ReadFile(marker); len(got) > 0 {
			break
		}
	}
	require.Equal(t, note, string(got), "the user's notify program ran too, with the same notification")

	out, code = c.run("", "hooks", "uninstall", "codex")
	require.Equal(t, 0, code, out)
	raw, err = os.ReadFile(cfg)
	require.NoError(t, err)
	require.Equal(t, orig, string(raw))
}

// TestSessionsSyncReadsAMisorderedSessionInChainOrder grows an interactive
// Claude Code session whose prompts were written after the replies they
// started (domain/formats/testdata/claude_code_misordered.jsonl) one line at
// a time, syncing after each line: whenever the trace exists its first step
// is the prompt, every sync appends (step ids kept), and a review made early
// survives to the end.
func TestSessionsSyncReadsAMisorderedSessionInChainOrder(t *testing.T) {
	in := startServe(t)
	key := in.newUser("misordered", false)
	c := newClientEnv(t, "CRITIC_URL="+in.url, "CRITIC_API_KEY="+key)
	raw, err := os.ReadFile(filepath.Join(pgtest.ModuleRoot(t), "domain", "formats", "testdata", "claude_code_misordered.jsonl"))
	require.NoError(t, err)
	const sid = "7d1c2b3a-4e5f-4a6b-8c7d-0e1f2a3b4c5d"
	lines := strings.SplitAfter(strings.TrimSuffix(string(raw), "\n"), "\n")
	path := filepath.Join(c.home, ".claude", "projects", "-home-dev-shop", sid+".jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	ids := []string{}
	annotated := false
	for n := 1; n <= len(lines); n++ {
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines[:n], "")), 0o600))
		out, code := c.run("", "sessions", "sync")
		require.Equal(t, 0, code, out)
		require.NotContains(t, out, "diverged   ", "line %d", n)
		d, ok := in.traceByExternalID(t, key, sid)
		if !ok {
			require.Empty(t, ids, "line %d: the trace disappeared", n)
			continue
		}
		require.Equal(t, "user", d.Steps[0]["role"], "line %d", n)
		require.Equal(t, "Why is the cart total off by one cent?", d.Steps[0]["content"], "line %d", n)
		got := stepIDs(d)
		require.GreaterOrEqual(t, len(got), len(ids), "line %d", n)
		require.Equal(t, ids, got[:len(ids)], "line %d: step ids changed", n)
		ids = got
		for i := 1; !annotated && i < len(d.Steps); i++ {
			if thinkingStep(d.Steps[i]) { // reasoning takes no rating
				continue
			}
			r := in.do("POST", "/api/v1/rm/traces/"+d.ID+"/annotations", key, map[string]any{"step_id": got[i], "rating": 1, "comment": "Reads the code before answering."})
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
			annotated = true
		}
	}
	d, ok := in.traceByExternalID(t, key, sid)
	require.True(t, ok)
	var roles []string
	for _, s := range d.Steps {
		roles = append(roles, strOf(s["role"])+":"+strOf(s["content"]))
	}
	require.Equal(t, []string{
		"user:Why is the cart total off by one cent?",
		"assistant:The cart total is computed in cart.py; read it first.",
		"assistant:Let me look at how the total is computed.",
		"assistant:",
		"tool:def total(items):\n    return round(sum(i.price for i in items), 2) - coupon",
		"assistant:The total is rounded before the coupon is subtracted.",
		"user:Fix it and run the tests.",
		"assistant:I'll move the rounding after the coupon.",
		"assistant:",
		"tool:3 passed",
		"assistant:Fixed: rounding now happens after the coupon; the tests pass.",
	}, roles)
	require.True(t, annotated)
	require.Len(t, d.Annotations, 1)
}

// TestClientAcceptsTheURLsTheProductShows: `critic login` takes the web
// app's address or the API's as the "Connect an agent" dialog shows it
// (…/api/v1, …/api/v1/rm, trailing slashes) and stores the base; a URL
// that is not a Critic server is refused with what to do and nothing is
// stored. Sync that finds no session names the folders it searched; an
// unknown agent is a short error naming the known ones; hooks install and
// uninstall give back the user's settings byte for byte.
func TestClientAcceptsTheURLsTheProductShows(t *testing.T) {
	in := startServe(t)
	key := in.newUser("connector", false)
	c := newClientEnv(t)
	cfg := filepath.Join(c.home, ".config", "critic", "config.json")
	stored := func() string {
		var s struct{ URL string }
		raw, err := os.ReadFile(cfg)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &s))
		return s.URL
	}
	for _, u := range []string{in.url + "/api/v1", in.url + "/api/v1/rm/", in.url + "/"} {
		out, code := c.run(key+"\n", "login", "--url", u)
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "logged in to "+in.url+" ")
		require.Equal(t, in.url, stored())
	}
	out, code := c.run(key+"\n", "login", "--url", in.url+"/critic-app")
	require.NotEqual(t, 0, code, out)
	require.Contains(t, out, "does not answer as a Critic server")
	require.Contains(t, out, "address of the Critic web app")
	require.NotContains(t, out, "no-verify")
	require.Equal(t, in.url, stored(), "nothing stored")

	// The dialog's form works for every command, from the environment too.
	out, code = c.with("CRITIC_URL="+in.url+"/api/v1/", "CRITIC_API_KEY="+key).run("", "sessions", "sync")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "no Claude Code or Codex sessions found: searched "+filepath.Join(c.home, ".claude", "projects")+" and "+filepath.Join(c.home, ".codex", "sessions"))

	out, code = c.run("", "hooks", "install", "claude-cod")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, `unknown agent "claude-cod": the known agents are claude-code and codex`)
	require.NotContains(t, out, "Usage:", "not the whole usage")

	orig := "{\n\t\"statusLine\": {\"type\": \"command\", \"command\": \"git status | wc -l > /tmp/n && echo ✓ < /dev/null\"},\n\t\"hooks\": {\n\t   \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"make lint && say done > /dev/null\"}]}]\n\t}\n}\n"
	settings := c.write(".claude/settings.json", orig)
	out, code = c.run("", "hooks", "install", "claude-code")
	require.Equal(t, 0, code, out)
	raw, err := os.ReadFile(settings)
	require.NoError(t, err)
	require.Contains(t, string(raw), "{\"hooks\": [{\"type\": \"command\", \"command\": \"make lint && say done > /dev/null\"}]}", "the user's hook untouched")
	require.Contains(t, string(raw), "hooks run claude-code")
	require.NotContains(t, string(raw), `\u00`)
	out, code = c.run("", "hooks", "uninstall", "claude-code")
	require.Equal(t, 0, code, out)
	raw, err = os.ReadFile(settings)
	require.NoError(t, err)
	require.Equal(t, orig, string(raw), "uninstall gives back the same bytes")
}
