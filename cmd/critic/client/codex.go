package client

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// CodexRollout is one rollout file under ~/.codex/sessions: Codex names a
// file rollout-<timestamp>-<rollout id>.jsonl; its session_meta names the
// thread (session) it belongs to, and, for a paginated page (forks and
// reverts since Codex 0.154), the history_base it continues.
type CodexRollout struct {
	Path      string
	RolloutID string // from the file name
	Stamp     string // the file name's timestamp, for "newest"
	ThreadID  string // session_meta.payload.id
	Base      *CodexHistoryBase
	Err       error // the file could not be read as a rollout
}

// CodexHistoryBase is where a page's inherited history ends in the rollout
// it names: the first EndByteOffset bytes, whose last record has ordinal
// EndOrdinalExclusive-1.
type CodexHistoryBase struct {
	ThreadID            string `json:"thread_id"`
	EndOrdinalExclusive *int64 `json:"end_ordinal_exclusive"`
	EndByteOffset       *int64 `json:"end_byte_offset"`
}

var rolloutNameRe = regexp.MustCompile(`^rollout-(.+)-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$`)

// ScanCodex reads the header of every rollout-*.jsonl under dir.
func ScanCodex(dir string) ([]CodexRollout, error) {
	var out []CodexRollout
	err := walkFiles(dir, func(name string) bool {
		return strings.HasPrefix(name, "rollout-") && strings.HasSuffix(name, ".jsonl")
	}, func(path string) { out = append(out, readCodexHeader(path)) })
	return out, err
}

// walkFiles calls add with every file under dir whose name match accepts.
// An unreadable subfolder is skipped, not fatal; an unreadable dir is.
func walkFiles(dir string, match func(name string) bool, add func(path string)) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			return nil
		}
		if !d.IsDir() && match(d.Name()) {
			add(path)
		}
		return nil
	})
}

func readCodexHeader(path string) CodexRollout {
	r := CodexRollout{Path: path}
	if m := rolloutNameRe.FindStringSubmatch(filepath.Base(path)); m != nil {
		r.Stamp, r.RolloutID = m[1], strings.ToLower(m[2])
	}
	f, err := os.Open(path)
	if err != nil {
		r.Err = err
		return r
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	first, _ := br.ReadBytes('\n')
	if len(bytes.TrimSpace(first)) == 0 {
		r.Err = fmt.Errorf("empty rollout")
		return r
	}
	var rec struct {
		Type    string `json:"type"`
		Payload struct {
			ID          string            `json:"id"`
			HistoryBase *CodexHistoryBase `json:"history_base"`
		} `json:"payload"`
		ID string `json:"id"` // the old bare header
	}
	if err := json.Unmarshal(first, &rec); err != nil {
		r.Err = fmt.Errorf("line 1 is not a JSON session header: %v", err)
		return r
	}
	r.ThreadID = rec.Payload.ID
	if rec.Type != "session_meta" {
		r.ThreadID = rec.ID
	}
	r.Base = rec.Payload.HistoryBase
	if r.RolloutID == "" {
		r.RolloutID = strings.ToLower(r.ThreadID)
	}
	return r
}

// NewestPages keeps one rollout per thread: the newest page (by the file
// name's timestamp, then path), which is the one that carries the whole
// conversation once its bases are read.
func NewestPages(rs []CodexRollout) []CodexRollout {
	best := map[string]CodexRollout{}
	for _, r := range rs {
		key := r.ThreadID
		if r.Err != nil || key == "" {
			key = "file:" + r.Path
		}
		if cur, ok := best[key]; !ok || r.Stamp > cur.Stamp || (r.Stamp == cur.Stamp && r.Path > cur.Path) {
			best[key] = r
		}
	}
	out := make([]CodexRollout, 0, len(best))
	for _, k := range slices.Sorted(maps.Keys(best)) {
		out = append(out, best[k])
	}
	return out
}

// LineageError is a page whose history cannot be rebuilt exactly.
type LineageError struct {
	Path, Reason string
}

func (e *LineageError) Error() string {
	return fmt.Sprintf("cannot rebuild the Codex session in %s: %s; not uploaded", e.Path, e.Reason)
}

type codexRecord struct {
	Type    string `json:"type"`
	Ordinal *int64 `json:"ordinal"`
}

// ReconstructCodex returns the whole conversation of a rollout as one
// self-contained rollout: the page's own session_meta (its history_base
// renamed resolved_history_base, so the server sees a complete file), the
// records each base contributes up to its exact byte and ordinal cut, then
// the page's own records. A rollout without a history_base is returned as
// it is. index finds rollouts by rollout id; a base that is missing, that
// more than one different file claims, that forms a cycle, or whose cut
// does not fall exactly at a record boundary with the stated ordinal fails.
func ReconstructCodex(page CodexRollout, index map[string][]CodexRollout) ([]byte, error) {
	data, err := os.ReadFile(page.Path)
	if err != nil {
		return nil, err
	}
	data = CompleteRecords(data)
	if page.Base == nil {
		return data, nil
	}
	header, _, _ := bytes.Cut(data, []byte{'\n'})
	meta, err := resolvedMeta(header)
	if err != nil {
		return nil, &LineageError{Path: page.Path, Reason: err.Error()}
	}
	// Walk to the root, collecting (segment, cut imposed by its child).
	type seg struct {
		r    CodexRollout
		data []byte
		cut  *CodexHistoryBase
	}
	chain := []seg{{r: page, data: data}}
	seen := map[string]bool{page.RolloutID: true}
	cur := page
	for cur.Base != nil {
		b := cur.Base
		if b.ThreadID == "" || b.EndByteOffset == nil || b.EndOrdinalExclusive == nil || *b.EndByteOffset < 0 || *b.EndOrdinalExclusive <= 0 {
			return nil, &LineageError{Path: page.Path, Reason: fmt.Sprintf("%s has a malformed history_base (needs thread_id, end_byte_offset ≥ 0, end_ordinal_exclusive > 0)", filepath.Base(cur.Path))}
		}
		id := strings.ToLower(b.ThreadID)
		if seen[id] {
			return nil, &LineageError{Path: page.Path, Reason: "its history_base chain forms a cycle at rollout " + id}
		}
		seen[id] = true
		base, baseData, err := pickBase(id, *b.EndByteOffset, index)
		if err != nil {
			return nil, &LineageError{Path: page.Path, Reason: err.Error()}
		}
		chain = append(chain, seg{r: base, data: baseData, cut: b})
		cur = base
	}
	out := append([]byte{}, meta...)
	out = append(out, '\n')
	for i, s := range slices.Backward(chain) {
		start := int64(0)
		if s.r.Base != nil {
			start = *s.r.Base.EndOrdinalExclusive
		}
		body := s.data
		if s.cut != nil {
			body = body[:*s.cut.EndByteOffset]
		}
		last := start - 1
		k := int64(0)
		for ln := range bytes.Lines(body) {
			if len(bytes.TrimSpace(ln)) == 0 {
				continue
			}
			var rec codexRecord
			if err := json.Unmarshal(ln, &rec); err != nil {
				return nil, &LineageError{Path: page.Path, Reason: fmt.Sprintf("%s has a malformed record: %v", filepath.Base(s.r.Path), err)}
			}
			ord := start + k
			if rec.Ordinal != nil {
				if *rec.Ordinal != ord && s.cut != nil {
					return nil, &LineageError{Path: page.Path, Reason: fmt.Sprintf("%s: record ordinal %d where %d was expected (non-contiguous history)", filepath.Base(s.r.Path), *rec.Ordinal, ord)}
				}
				ord = *rec.Ordinal
			}
			k++
			last = ord
			if rec.Type == "session_meta" {
				continue
			}
			if i == 0 && k == 1 {
				continue // the page's own header, already written
			}
			out = append(out, bytes.TrimRight(ln, "\r\n")...)
			out = append(out, '\n')
		}
		if s.cut != nil && last != *s.cut.EndOrdinalExclusive-1 {
			return nil, &LineageError{Path: page.Path, Reason: fmt.Sprintf("the history_base cut of %s ends at ordinal %d, but end_ordinal_exclusive is %d", filepath.Base(s.r.Path), last, *s.cut.EndOrdinalExclusive)}
		}
	}
	return out, nil
}

// pickBase finds the one rollout with this id whose first `cut` bytes end
// at a record boundary; copies with identical prefixes are the same base.
func pickBase(id string, cut int64, index map[string][]CodexRollout) (CodexRollout, []byte, error) {
	cands := index[id]
	if len(cands) == 0 {
		return CodexRollout{}, nil, fmt.Errorf("its history_base names rollout %s, which is not on disk (missing base)", id)
	}
	var pick CodexRollout
	var pickData []byte
	var paths []string
	for _, c := range cands {
		d, err := os.ReadFile(c.Path)
		if err != nil {
			return CodexRollout{}, nil, fmt.Errorf("base rollout %s: %v", c.Path, err)
		}
		if cut > int64(len(d)) {
			return CodexRollout{}, nil, fmt.Errorf("its history_base cuts rollout %s at byte %d, past its end (%d bytes)", c.Path, cut, len(d))
		}
		if cut > 0 && d[cut-1] != '\n' {
			return CodexRollout{}, nil, fmt.Errorf("its history_base cuts rollout %s at byte %d, inside a record", c.Path, cut)
		}
		if pickData == nil {
			pick, pickData = c, d
			paths = append(paths, c.Path)
			continue
		}
		if !bytes.Equal(pickData[:cut], d[:cut]) {
			paths = append(paths, c.Path)
		}
	}
	if len(paths) > 1 {
		return CodexRollout{}, nil, fmt.Errorf("its history_base names rollout %s, which %d different files claim (ambiguous base): %s", id, len(paths), strings.Join(paths, ", "))
	}
	return pick, pickData, nil
}

// resolvedMeta renames payload.history_base to resolved_history_base in a
// session_meta line, keeping every other byte.
func resolvedMeta(line []byte) ([]byte, error) {
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(line, &rec); err != nil {
		return nil, fmt.Errorf("line 1 is not JSON: %v", err)
	}
	var payload map[string]json.RawMessage
	if err := json.Unmarshal(rec["payload"], &payload); err != nil {
		return nil, fmt.Errorf("line 1 has no session_meta payload")
	}
	payload["resolved_history_base"] = payload["history_base"]
	delete(payload, "history_base")
	p, _ := marshalNoEscape(payload)
	rec["payload"] = p
	return marshalNoEscape(rec)
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// CompleteRecords drops a last line the agent is still writing (no LF yet
// and not valid JSON), so a snapshot taken mid-write uploads what is done.
func CompleteRecords(data []byte) []byte {
	if len(data) == 0 || data[len(data)-1] == '\n' {
		return data
	}
	i := bytes.LastIndexByte(data, '\n')
	if json.Valid(data[i+1:]) {
		return data
	}
	return data[:i+1]
}

// IndexCodex maps rollout ids to the files that carry them.
func IndexCodex(rs []CodexRollout) map[string][]CodexRollout {
	idx := map[string][]CodexRollout{}
	for _, r := range rs {
		if r.Err == nil && r.RolloutID != "" {
			idx[r.RolloutID] = append(idx[r.RolloutID], r)
		}
	}
	return idx
}
