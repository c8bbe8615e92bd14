package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/criticml/critic/domain/formats"
)

// SessionState is what the last successful upload of a session sent: a
// session whose file has the same size and hash is skipped without asking
// the server.
type SessionState struct {
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	ModTime  time.Time `json:"mod_time"`
	SHA256   string    `json:"sha256"`
	TraceID  string    `json:"trace_id"`
	SyncedAt time.Time `json:"synced_at"`
	// Held says the upload left records out whose parent was not written
	// yet (see formats.ClaudeCodeSettled): the file is read again even if
	// it did not change, so they go up once it has been quiet.
	Held bool `json:"held,omitempty"`
	// Erased says the server erased the session's trace: an erased trace
	// is not stored again, so the session is not sent again either.
	Erased bool `json:"erased,omitempty"`
}

// SyncState is the client's record of uploaded sessions, keyed by
// "claude-code:<path>" or "codex:<thread id>".
type SyncState struct {
	Version  int                     `json:"version"`
	Sessions map[string]SessionState `json:"sessions"`
	// LastUpload is the newest upload attempt by a hook or a sync, for
	// `critic hooks status`.
	LastUpload *UploadRecord `json:"last_upload,omitempty"`
	path       string
}

// UploadRecord describes one upload attempt.
type UploadRecord struct {
	At      time.Time `json:"at"`
	Agent   string    `json:"agent"`
	Path    string    `json:"path"`
	Outcome string    `json:"outcome"` // synced, unchanged, diverged, erased, failed, queued
	Detail  string    `json:"detail,omitempty"`
}

// LoadSyncState reads the state file (an empty state when there is none).
func LoadSyncState() (*SyncState, error) {
	d, err := Dir()
	if err != nil {
		return nil, err
	}
	s := &SyncState{Version: 1, Sessions: map[string]SessionState{}, path: filepath.Join(d, "sync-state.json")}
	raw, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("%s is corrupt (delete it to upload every session again; the server skips what it has): %v", s.path, err)
	}
	if s.Sessions == nil {
		s.Sessions = map[string]SessionState{}
	}
	return s, nil
}

// Save writes the state atomically.
func (s *SyncState) Save() error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	raw, _ := json.MarshalIndent(s, "", "  ")
	return WriteFileAtomic(s.path, append(raw, '\n'), 0o600)
}

// Session is one local agent session to upload.
type Session struct {
	Agent string // claude-code or codex
	Key   string // state key
	Path  string // the file (for codex: the newest page)
	// Read returns the bytes to upload (for codex: the rebuilt rollout).
	Read func() ([]byte, error)
}

// SyncOutcome is what syncing one session did.
type SyncOutcome struct {
	Session Session
	Outcome string // synced, unchanged, empty, diverged, erased, failed, unreachable
	TraceID string
	Detail  string
}

// SyncSession uploads one session unless the state shows it unchanged.
// A grown session appends on the server; a divergent one comes back as
// trace_sync_error and is reported, the server copy untouched.
func SyncSession(ctx context.Context, up *Uploader, st *SyncState, s Session) SyncOutcome {
	o := SyncOutcome{Session: s}
	info, err := os.Stat(s.Path)
	if err != nil {
		o.Outcome, o.Detail = "failed", err.Error()
		return o
	}
	prev, had := st.Sessions[s.Key]
	sameFile := prev.Path == s.Path && prev.Size == info.Size() && prev.ModTime.Equal(info.ModTime())
	if had && (prev.Erased || (!prev.Held && sameFile)) {
		o.Outcome, o.TraceID = "unchanged", prev.TraceID
		return o
	}
	data, err := s.Read()
	if err != nil {
		o.Outcome, o.Detail = "failed", err.Error()
		return o
	}
	data = CompleteRecords(data)
	held := false
	if s.Agent == "claude-code" && time.Since(info.ModTime()) < SettleWait {
		if settled := formats.ClaudeCodeSettled(data); len(settled) < len(data) {
			data, held = settled, true
		}
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	if had && prev.SHA256 == hash {
		prev.Path, prev.Size, prev.ModTime, prev.Held = s.Path, info.Size(), info.ModTime(), held
		st.Sessions[s.Key] = prev
		o.Outcome, o.TraceID = "unchanged", prev.TraceID
		return o
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		o.Outcome = "unchanged"
		return o
	}
	format := "claude_code"
	if s.Agent == "codex" {
		format = "codex"
	}
	res, fail := up.Upload(ctx, format, data, "")
	if fail != nil {
		switch {
		case fail.Field == "steps" && fail.Line == 0 && strings.Contains(fail.Message, "at least one step"):
			// No conversation yet (a session just started, or a file of
			// summary records only): nothing to sync until it grows.
			o.Outcome = "empty"
			st.Sessions[s.Key] = SessionState{Path: s.Path, Size: info.Size(), ModTime: info.ModTime(), SHA256: hash, SyncedAt: time.Now().UTC(), Held: held}
		case fail.Code == "trace_sync_error":
			o.Outcome, o.Detail = "diverged", fail.Message
		case strings.HasPrefix(fail.Message, "cannot reach the Critic server") || fail.Code == "unavailable":
			o.Outcome, o.Detail = "unreachable", fail.Message
		default:
			o.Outcome, o.Detail = "failed", fail.Error()
		}
		return o
	}
	o.Outcome = "synced"
	if len(res.TraceIDs) > 0 {
		o.TraceID = res.TraceIDs[0]
	}
	if len(res.TraceIDs) == 0 && len(res.Erased) > 0 {
		o.Outcome, o.TraceID = "erased", res.Erased[0]
		st.Sessions[s.Key] = SessionState{Path: s.Path, Size: info.Size(), ModTime: info.ModTime(), SHA256: hash, TraceID: o.TraceID, SyncedAt: time.Now().UTC(), Erased: true}
		return o
	}
	if res.Traces > 0 && res.Unchanged == res.Traces {
		o.Outcome = "unchanged"
	}
	st.Sessions[s.Key] = SessionState{Path: s.Path, Size: info.Size(), ModTime: info.ModTime(), SHA256: hash, TraceID: o.TraceID, SyncedAt: time.Now().UTC(), Held: held}
	return o
}

// SettleWait is how long a Claude Code transcript must be left unchanged
// before records whose parent is not in it are uploaded anyway: Claude
// Code writes a late prompt within moments, so a parent missing after this
// long is never coming (a transcript cut at the head).
const SettleWait = time.Minute

// ClaudeSessions lists ~/.claude/projects/**/*.jsonl.
func ClaudeSessions(dir string) ([]Session, error) {
	var out []Session
	err := walkFiles(dir, func(name string) bool { return strings.HasSuffix(name, ".jsonl") },
		func(path string) { out = append(out, ClaudeSession(path)) })
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

// ClaudeSession is one Claude Code transcript file.
func ClaudeSession(path string) Session {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return Session{Agent: "claude-code", Key: "claude-code:" + path, Path: path, Read: func() ([]byte, error) { return os.ReadFile(path) }}
}

// CodexSessions lists the newest page of every Codex thread under dir, each
// read as its rebuilt conversation; threadID, when set, keeps only that
// thread.
func CodexSessions(dir, threadID string) ([]Session, error) {
	rs, err := ScanCodex(dir)
	if err != nil {
		return nil, err
	}
	idx := IndexCodex(rs)
	var out []Session
	for _, r := range NewestPages(rs) {
		if threadID != "" && !strings.EqualFold(r.ThreadID, threadID) {
			continue
		}
		key := "codex:" + r.ThreadID
		if r.Err != nil || r.ThreadID == "" {
			key = "codex-file:" + r.Path
		}
		out = append(out, Session{Agent: "codex", Key: key, Path: r.Path, Read: func() ([]byte, error) {
			if r.Err != nil {
				return nil, fmt.Errorf("%s: %v", r.Path, r.Err)
			}
			return ReconstructCodex(r, idx)
		}})
	}
	return out, nil
}

// QueueEntry is an upload a hook could not finish (or has not finished
// yet): the next sync or hook sends it.
type QueueEntry struct {
	Agent          string    `json:"agent"`
	TranscriptPath string    `json:"transcript_path,omitempty"`
	SessionID      string    `json:"session_id,omitempty"`
	CodexDir       string    `json:"codex_dir,omitempty"`
	Event          string    `json:"event,omitempty"`
	QueuedAt       time.Time `json:"queued_at"`
	file           string
}

// QueueDir holds one JSON file per pending upload.
func QueueDir() (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "queue"), nil
}

// Enqueue records an upload to make; the same session queued twice is one
// entry (the newest snapshot is what gets sent anyway).
func Enqueue(e QueueEntry) error {
	q, err := QueueDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(q, 0o700); err != nil {
		return err
	}
	id := sha256.Sum256([]byte(e.Agent + "\x00" + e.TranscriptPath + "\x00" + e.SessionID))
	raw, _ := json.Marshal(e)
	return WriteFileAtomic(filepath.Join(q, hex.EncodeToString(id[:8])+".json"), raw, 0o600)
}

// PendingUploads lists the queue, oldest first.
func PendingUploads() ([]QueueEntry, error) {
	q, err := QueueDir()
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(q)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []QueueEntry
	for _, de := range ents {
		if !strings.HasSuffix(de.Name(), ".json") || strings.HasPrefix(de.Name(), ".") {
			continue
		}
		p := filepath.Join(q, de.Name())
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var e QueueEntry
		if json.Unmarshal(raw, &e) != nil {
			continue
		}
		e.file = p
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].QueuedAt.Before(out[j].QueuedAt) })
	return out, nil
}

// Done removes a sent entry, unless a hook queued the session again since
// it was read (then the newer snapshot still has to go).
func (e QueueEntry) Done() error {
	if e.file == "" {
		return nil
	}
	if raw, err := os.ReadFile(e.file); err == nil {
		var now QueueEntry
		if json.Unmarshal(raw, &now) == nil && !now.QueuedAt.Equal(e.QueuedAt) {
			return nil
		}
	}
	err := os.Remove(e.file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
