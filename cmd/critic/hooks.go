package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/criticml/critic/cmd/critic/client"
)

const hooksUsage = "usage: critic hooks install|uninstall claude-code|codex, or critic hooks status"

// cmdHooks installs the recorders that upload every new session. The hook
// the agent runs (`critic hooks run …`) only queues the upload and starts a
// detached `critic hooks flush`, so it returns at once and never blocks the
// agent; when the server is down the upload stays queued and the next hook
// or `critic sessions sync` sends it.
func cmdHooks(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{hooksUsage}
	}
	switch args[0] {
	case "install", "uninstall":
		if len(args) != 2 {
			return usageError{hooksUsage}
		}
		return hooksInstall(args[1], args[0] == "install")
	case "status":
		return hooksStatus(os.Stdout)
	case "run":
		// Called by the agent: whatever happens, exit 0 and print nothing
		// on stdout (Claude Code reads a Stop hook's stdout as a decision).
		if len(args) < 2 {
			return nil
		}
		hookRun(args[1], args[2:], os.Stdin)
		return nil
	case "flush":
		return hooksFlush(ctx)
	}
	return usageError{hooksUsage}
}

func claudeSettingsPath() string { return filepath.Join(defaultClaudeHome(), "settings.json") }

func codexConfigPath() string { return filepath.Join(defaultCodexHome(), "config.toml") }

// selfPath is the absolute path of this binary, which the hooks call.
func selfPath() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return filepath.Abs(p)
}

func hooksInstall(agent string, install bool) error {
	self, err := selfPath()
	if err != nil {
		return err
	}
	switch agent {
	case "claude-code":
		path := claudeSettingsPath()
		raw, err := client.ReadFileOrEmpty(path)
		if err != nil {
			return err
		}
		cmd := ""
		if install {
			cmd = client.ShellQuote(self) + " hooks run claude-code"
		}
		out, err := client.EditClaudeSettings(raw, cmd)
		if err != nil {
			return fmt.Errorf("%s: %v (nothing changed)", path, err)
		}
		if !install && raw == nil {
			fmt.Printf("Claude Code: no hook to remove (%s does not exist)\n", path)
			return nil
		}
		if err := client.WriteConfig(path, out); err != nil {
			return err
		}
		if install {
			fmt.Printf("Claude Code: hook installed in %s (%s); each session uploads when the agent stops or the session ends\n", path, strings.Join(client.ClaudeHookEvents, ", "))
			warnTemporaryBinary(self)
			warnNoLogin()
		} else {
			fmt.Printf("Claude Code: hook removed from %s (other hooks kept)\n", path)
		}
		return nil
	case "codex":
		path := codexConfigPath()
		raw, err := client.ReadFileOrEmpty(path)
		if err != nil {
			return err
		}
		var argv []string
		if install {
			argv = []string{self, "hooks", "run", "codex"}
		}
		out, err := client.EditCodexConfig(raw, argv)
		if err != nil {
			return fmt.Errorf("%s: %v (nothing changed)", path, err)
		}
		if !install && !client.CodexHookInstalled(raw) {
			fmt.Printf("Codex: no hook to remove in %s\n", path)
			return nil
		}
		if err := client.WriteConfig(path, out); err != nil {
			return err
		}
		if install {
			fmt.Printf("Codex: notify hook installed in %s; each turn's rollout uploads when the turn completes\n", path)
			if prev := client.CodexPreviousNotify(out); prev != nil {
				fmt.Printf("Codex: your previous notify program (%s) is kept and still runs after each turn\n", strings.Join(prev, " "))
			}
			warnTemporaryBinary(self)
			warnNoLogin()
		} else {
			fmt.Printf("Codex: hook removed from %s\n", path)
		}
		return nil
	}
	return fmt.Errorf("unknown agent %q: the known agents are claude-code and codex (e.g. critic hooks install claude-code)", agent)
}

// warnTemporaryBinary says when the hook would point at a binary that will
// not be there later (`go run`, a build in /tmp).
func warnTemporaryBinary(self string) {
	if tmp := os.TempDir(); tmp != "" && strings.HasPrefix(self, filepath.Clean(tmp)+string(filepath.Separator)) {
		fmt.Printf("note: the hook runs %s, which is in a temporary directory; install critic somewhere permanent and run this again\n", self)
	}
}

func warnNoLogin() {
	if s, err := client.LoadSettings(); err == nil && s.Require() != nil {
		fmt.Println("note: no server configured yet; run `critic login --url URL` so the hook can upload (until then uploads are queued)")
	}
}

// hookRun queues the session the agent just paused or ended and starts a
// detached flush. Problems go to the hook log, never to the agent.
func hookRun(agent string, args []string, stdin io.Reader) {
	var e client.QueueEntry
	switch agent {
	case "claude-code":
		raw, _ := io.ReadAll(io.LimitReader(stdin, 4<<20))
		var in struct {
			SessionID      string `json:"session_id"`
			TranscriptPath string `json:"transcript_path"`
			HookEventName  string `json:"hook_event_name"`
		}
		if err := json.Unmarshal(raw, &in); err != nil || in.TranscriptPath == "" {
			hookLogf("claude-code hook: no transcript_path in the hook input (%d bytes)", len(raw))
			return
		}
		e = client.QueueEntry{Agent: agent, TranscriptPath: in.TranscriptPath, SessionID: in.SessionID, Event: in.HookEventName}
	case "codex":
		// Codex passes one JSON argument: {"type": "agent-turn-complete",
		// "thread-id": …, …}.
		if len(args) == 0 {
			hookLogf("codex hook: no notification argument")
			return
		}
		note := args[len(args)-1]
		var in struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread-id"`
		}
		if err := json.Unmarshal([]byte(note), &in); err != nil || in.ThreadID == "" {
			hookLogf("codex hook: notification without thread-id: %.200s", note)
			return
		}
		chainCodexNotify(note)
		e = client.QueueEntry{Agent: agent, SessionID: in.ThreadID, CodexDir: defaultCodexSessions(), Event: in.Type}
	default:
		hookLogf("hook for unknown agent %q", agent)
		return
	}
	e.QueuedAt = time.Now().UTC()
	if err := client.Enqueue(e); err != nil {
		hookLogf("%s hook: cannot queue the upload: %v", agent, err)
		return
	}
	if os.Getenv("CRITIC_HOOK_FOREGROUND") == "1" {
		if err := hooksFlush(context.Background()); err != nil {
			hookLogf("flush: %v", err)
		}
		return
	}
	if err := startDetached("hooks", "flush"); err != nil {
		hookLogf("%s hook: cannot start the uploader (queued for the next sync): %v", agent, err)
	}
}

// chainCodexNotify runs the notify program the hook replaced, detached.
func chainCodexNotify(note string) {
	raw, err := os.ReadFile(codexConfigPath())
	if err != nil {
		return
	}
	prev := client.CodexPreviousNotify(raw)
	if len(prev) == 0 {
		return
	}
	cmd := exec.Command(prev[0], append(prev[1:], note)...)
	detach(cmd)
	if err := cmd.Start(); err != nil {
		hookLogf("codex hook: your previous notify program %q did not start: %v", prev[0], err)
		return
	}
	_ = cmd.Process.Release()
}

// startDetached runs this binary with args in its own session, output to
// the hook log, and does not wait for it.
func startDetached(args ...string) error {
	self, err := selfPath()
	if err != nil {
		return err
	}
	log, err := openHookLog()
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = log, log
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

func openHookLog() (*os.File, error) {
	d, err := client.Dir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(d, "hooks.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
}

// hookLogf adds a time-stamped line to the hook log.
func hookLogf(format string, args ...any) {
	f, err := openHookLog()
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// hooksFlush sends every queued upload (what the hooks start in the
// background); what cannot be sent stays queued.
func hooksFlush(ctx context.Context) error {
	c, err := serverClient()
	if err != nil {
		if st, lerr := client.LoadSyncState(); lerr == nil {
			st.LastUpload = &client.UploadRecord{At: time.Now().UTC(), Outcome: "queued", Detail: err.Error()}
			_ = st.Save()
		}
		return err
	}
	up := &client.Uploader{Client: c, Path: client.TranscriptsPath, MaxRequest: client.DefaultMaxRequest}
	w := &stampWriter{w: os.Stdout}
	_, err = runSync(ctx, up, w, "", defaultCodexSessions(), false)
	return err
}

// stampWriter prefixes each line of the hook log with the time.
type stampWriter struct{ w io.Writer }

func (s *stampWriter) Write(p []byte) (int, error) {
	_, err := fmt.Fprintf(s.w, "%s %s", time.Now().UTC().Format(time.RFC3339), p)
	return len(p), err
}

func hooksStatus(w io.Writer) error {
	if raw, err := client.ReadFileOrEmpty(claudeSettingsPath()); err == nil {
		if evs := client.ClaudeHookInstalled(raw); len(evs) > 0 {
			fmt.Fprintf(w, "Claude Code: installed in %s (%s)\n", claudeSettingsPath(), strings.Join(evs, ", "))
		} else {
			fmt.Fprintf(w, "Claude Code: not installed (critic hooks install claude-code)\n")
		}
	}
	if raw, err := client.ReadFileOrEmpty(codexConfigPath()); err == nil {
		if client.CodexHookInstalled(raw) {
			fmt.Fprintf(w, "Codex:       installed in %s (notify)\n", codexConfigPath())
		} else {
			fmt.Fprintf(w, "Codex:       not installed (critic hooks install codex)\n")
		}
	}
	if s, err := client.LoadSettings(); err == nil {
		if s.URL != "" {
			fmt.Fprintf(w, "server:      %s\n", s.URL)
		} else {
			fmt.Fprintf(w, "server:      none configured (critic login --url URL)\n")
		}
	}
	q, err := client.PendingUploads()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "queue:       %d upload(s) waiting", len(q))
	if len(q) > 0 {
		fmt.Fprintf(w, " (the next hook or `critic sessions sync` sends them)")
	}
	fmt.Fprintln(w)
	for _, e := range q {
		what := cmp.Or(e.TranscriptPath, "session "+e.SessionID)
		fmt.Fprintf(w, "  %s %s %s\n", e.QueuedAt.Format(time.RFC3339), e.Agent, what)
	}
	st, err := client.LoadSyncState()
	if err != nil {
		return err
	}
	if l := st.LastUpload; l != nil {
		fmt.Fprintf(w, "last upload: %s %s %s: %s", l.At.Format(time.RFC3339), l.Agent, l.Path, l.Outcome)
		if l.Detail != "" {
			fmt.Fprintf(w, " (%s)", l.Detail)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "last upload: none yet")
	}
	return nil
}
