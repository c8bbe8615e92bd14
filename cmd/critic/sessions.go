package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/criticml/critic/cmd/critic/client"
)

const sessionsUsage = "usage: critic sessions sync [--claude-dir DIR] [--codex-dir DIR]"

// cmdSessions is `critic sessions sync`: every local Claude Code and Codex
// session goes to POST /api/v1/me/transcripts, the native upload path.
// Sessions whose files did not change since the last sync are skipped
// locally (the state file keeps sizes and hashes), the server skips what it
// already has, and a session edited in the middle is reported with the
// server's trace_sync_error and left as it is. Uploads the hooks queued
// while the server was down go first. Safe to run at any time.
func cmdSessions(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "sync" {
		return usageError{sessionsUsage}
	}
	flags, pos, err := clientArgs(args[1:], []string{"claude-dir", "codex-dir", "max-request-bytes"}, nil)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{sessionsUsage}
	}
	maxReq, err := intFlag(flags, "max-request-bytes", client.DefaultMaxRequest, 1024)
	if err != nil {
		return err
	}
	c, err := serverClient()
	if err != nil {
		return err
	}
	for _, d := range []string{flags["claude-dir"], flags["codex-dir"]} {
		if d == "" {
			continue
		}
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return fmt.Errorf("%s is not a folder", d)
		}
	}
	claudeDir := cmp.Or(flags["claude-dir"], defaultClaudeProjects())
	codexDir := cmp.Or(flags["codex-dir"], defaultCodexSessions())
	up := &client.Uploader{Client: c, Path: client.TranscriptsPath, MaxRequest: maxReq}
	tally, err := runSync(ctx, up, os.Stdout, claudeDir, codexDir, true)
	if err != nil {
		return err
	}
	found := 0
	for _, n := range tally {
		found += n
	}
	if found == 0 {
		fmt.Printf("no Claude Code or Codex sessions found: searched %s and %s (point --claude-dir / --codex-dir, CLAUDE_CONFIG_DIR or CODEX_HOME at where your agents keep them)\n", claudeDir, codexDir)
	}
	fmt.Printf("sessions: %d synced, %d unchanged, %d diverged, %d failed", tally["synced"], tally["unchanged"], tally["diverged"], tally["failed"])
	if tally["erased"] > 0 {
		fmt.Printf(", %d erased on the server (not sent again)", tally["erased"])
	}
	if tally["empty"] > 0 {
		fmt.Printf(", %d without a conversation yet", tally["empty"])
	}
	if tally["unreachable"] > 0 {
		fmt.Printf(", %d not sent (server unreachable; queued for the next sync)", tally["unreachable"])
	}
	fmt.Println()
	switch {
	case tally["unreachable"] > 0:
		return fmt.Errorf("the server at %s could not be reached", c.BaseURL)
	case tally["failed"] > 0:
		return fmt.Errorf("%d session(s) failed", tally["failed"])
	}
	return nil
}

// runSync drains the hook queue, then (when scan is set) every session
// under the two folders, under the machine-wide sync lock. It prints one
// line per session that did something and returns the counts by outcome.
func runSync(ctx context.Context, up *client.Uploader, w io.Writer, claudeDir, codexDir string, scan bool) (map[string]int, error) {
	release, err := client.Lock()
	if err != nil {
		return nil, err
	}
	defer release()
	st, err := client.LoadSyncState()
	if err != nil {
		return nil, err
	}
	tally := map[string]int{}
	done := map[string]bool{}
	report := func(o client.SyncOutcome) {
		tally[o.Outcome]++
		done[o.Session.Key] = true
		rec := client.UploadRecord{At: time.Now().UTC(), Agent: o.Session.Agent, Path: o.Session.Path, Outcome: o.Outcome, Detail: o.Detail}
		if o.Outcome != "unchanged" || st.LastUpload == nil {
			st.LastUpload = &rec
		}
		switch o.Outcome {
		case "synced":
			fmt.Fprintf(w, "synced     %s %s → trace %s\n", o.Session.Agent, o.Session.Path, o.TraceID)
		case "erased":
			fmt.Fprintf(w, "erased     %s %s: the server erased trace %s; an erased trace is not stored again, so this session is not sent again\n", o.Session.Agent, o.Session.Path, o.TraceID)
		case "diverged":
			fmt.Fprintf(w, "diverged   %s %s: trace_sync_error: %s (the server copy and its review are kept; this session is not synced)\n", o.Session.Agent, o.Session.Path, o.Detail)
		case "failed":
			fmt.Fprintf(w, "failed     %s %s: %s\n", o.Session.Agent, o.Session.Path, o.Detail)
		case "unreachable":
			fmt.Fprintf(w, "not sent   %s %s: %s\n", o.Session.Agent, o.Session.Path, o.Detail)
		}
	}
	defer func() { _ = st.Save() }()

	// 1. What the hooks queued.
	queue, err := client.PendingUploads()
	if err != nil {
		return nil, err
	}
	unreachable := false
	for _, e := range queue {
		if ctx.Err() != nil {
			return tally, ctx.Err()
		}
		var sessions []client.Session
		switch e.Agent {
		case "claude-code":
			if e.TranscriptPath == "" {
				_ = e.Done()
				continue
			}
			sessions = []client.Session{client.ClaudeSession(e.TranscriptPath)}
		case "codex":
			dir := cmp.Or(e.CodexDir, codexDir)
			sessions, err = client.CodexSessions(dir, e.SessionID)
			if err == nil && len(sessions) == 0 {
				err = errors.New("no rollout of Codex session " + e.SessionID + " under " + dir)
			}
			if err != nil {
				report(client.SyncOutcome{Session: client.Session{Agent: "codex", Key: "codex:" + e.SessionID, Path: dir}, Outcome: "failed", Detail: err.Error()})
				_ = e.Done()
				continue
			}
		default:
			_ = e.Done()
			continue
		}
		// An entry stays queued once the server is unreachable.
		for _, s := range sessions {
			if unreachable {
				break
			}
			o := client.SyncSession(ctx, up, st, s)
			report(o)
			unreachable = o.Outcome == "unreachable"
		}
		if !unreachable {
			_ = e.Done()
		}
		_ = st.Save()
	}
	if !scan || unreachable {
		return tally, nil
	}

	// 2. Every session on disk.
	var all []client.Session
	if claudeDir != "" {
		if ss, err := client.ClaudeSessions(claudeDir); err == nil {
			all = append(all, ss...)
		} else if !os.IsNotExist(err) {
			return tally, fmt.Errorf("reading Claude Code sessions in %s: %v", claudeDir, err)
		}
	}
	if codexDir != "" {
		if ss, err := client.CodexSessions(codexDir, ""); err == nil {
			all = append(all, ss...)
		} else if !os.IsNotExist(err) {
			return tally, fmt.Errorf("reading Codex sessions in %s: %v", codexDir, err)
		}
	}
	for i, s := range all {
		if done[s.Key] {
			continue
		}
		if ctx.Err() != nil {
			return tally, ctx.Err()
		}
		o := client.SyncSession(ctx, up, st, s)
		report(o)
		if o.Outcome == "unreachable" {
			// Nothing else will get through either; the next sync retries.
			tally["unreachable"] += len(all) - i - 1
			break
		}
		if i%50 == 49 {
			_ = st.Save()
		}
	}
	return tally, nil
}

// agentHome is $env, else ~/dotDir: where an agent keeps its sessions
// and settings.
func agentHome(env, dotDir string) string {
	if d := os.Getenv(env); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, dotDir)
}

func defaultClaudeHome() string { return agentHome("CLAUDE_CONFIG_DIR", ".claude") }

func defaultClaudeProjects() string { return filepath.Join(defaultClaudeHome(), "projects") }

func defaultCodexHome() string { return agentHome("CODEX_HOME", ".codex") }

func defaultCodexSessions() string { return filepath.Join(defaultCodexHome(), "sessions") }
