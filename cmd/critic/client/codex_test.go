package client

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/formats"
)

// rolloutWriter builds paginated Codex rollouts: every record carries its
// logical ordinal, a page's session_meta takes the ordinal its base ends at.
type rolloutWriter struct {
	dir string
	n   int
}

func (w *rolloutWriter) meta(id string, ordinal int64, base map[string]any) string {
	p := map[string]any{"id": id, "timestamp": "2026-09-11T08:00:00Z", "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.154.0", "history_mode": "paginated"}
	if base != nil {
		p["history_base"] = base
	}
	return w.line("session_meta", ordinal, p)
}

func (w *rolloutWriter) line(typ string, ordinal int64, payload map[string]any) string {
	w.n++
	raw, _ := json.Marshal(map[string]any{"timestamp": fmt.Sprintf("2026-09-11T08:%02d:%02dZ", w.n/60, w.n%60), "type": typ, "ordinal": ordinal, "payload": payload})
	return string(raw) + "\n"
}

func (w *rolloutWriter) turn(q, a string, ordinal int64) (string, int64) {
	msg := func(role, kind, text string) map[string]any {
		return map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": kind, "text": text}}}
	}
	s := w.line("response_item", ordinal, msg("user", "input_text", q))
	s += w.line("response_item", ordinal+1, msg("assistant", "output_text", a))
	return s, ordinal + 2
}

func (w *rolloutWriter) write(t *testing.T, stamp, id, body string) string {
	p := filepath.Join(w.dir, "2026", "09", "11", "rollout-"+stamp+"-"+id+".jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func contents(t *testing.T, data []byte) []string {
	tr, err := formats.Codex{}.Parse(data)
	require.NoError(t, err)
	var out []string
	for _, s := range tr[0].Steps {
		out = append(out, string(s.Role)+":"+s.Content)
	}
	return out
}

const (
	idP  = "0199f0c1-0000-7000-8000-00000000000a"
	idF1 = "0199f0c1-0000-7000-8000-00000000000b"
	idF2 = "0199f0c1-0000-7000-8000-00000000000c"
)

// TestReconstructCodexFollowsHistoryBaseChains: a fork of a fork is rebuilt
// from the exact byte and ordinal cuts of both bases, and the server's
// adapter reads it as the whole conversation under the fork's own id.
func TestReconstructCodexFollowsHistoryBaseChains(t *testing.T) {
	t.Parallel()
	w := &rolloutWriter{dir: t.TempDir()}
	// P: ONE, TWO.
	p := w.meta(idP, 0, nil)
	one, o := w.turn("ONE?", "ONE", 1)
	p += one
	cutP, endP := int64(len(p)), o // F1 keeps ONE
	two, _ := w.turn("TWO?", "TWO", o)
	p += two
	w.write(t, "2026-09-11T08-00-00", idP, p)
	// F1 = P up to ONE, then THREE, FOUR.
	f1 := w.meta(idF1, endP, map[string]any{"thread_id": idP, "end_ordinal_exclusive": endP, "end_byte_offset": cutP})
	three, o := w.turn("THREE?", "THREE", endP+1)
	f1 += three
	cutF1, endF1 := int64(len(f1)), o // F2 keeps THREE
	four, _ := w.turn("FOUR?", "FOUR", o)
	f1 += four
	w.write(t, "2026-09-11T08-10-00", idF1, f1)
	// F2 = F1 up to THREE, then FIVE.
	f2 := w.meta(idF2, endF1, map[string]any{"thread_id": idF1, "end_ordinal_exclusive": endF1, "end_byte_offset": cutF1})
	five, _ := w.turn("FIVE?", "FIVE", endF1+1)
	f2 += five
	w.write(t, "2026-09-11T08-20-00", idF2, f2)

	rs, err := ScanCodex(w.dir)
	require.NoError(t, err)
	pages := NewestPages(rs)
	require.Len(t, pages, 3)
	idx := IndexCodex(rs)
	got := map[string][]string{}
	for _, pg := range pages {
		data, err := ReconstructCodex(pg, idx)
		require.NoError(t, err, pg.Path)
		tr, err := formats.Codex{}.Parse(data)
		require.NoError(t, err)
		require.Equal(t, pg.ThreadID, tr[0].ExternalID)
		got[pg.ThreadID] = contents(t, data)
	}
	require.Equal(t, []string{"user:ONE?", "assistant:ONE", "user:TWO?", "assistant:TWO"}, got[idP])
	require.Equal(t, []string{"user:ONE?", "assistant:ONE", "user:THREE?", "assistant:THREE", "user:FOUR?", "assistant:FOUR"}, got[idF1])
	require.Equal(t, []string{"user:ONE?", "assistant:ONE", "user:THREE?", "assistant:THREE", "user:FIVE?", "assistant:FIVE"}, got[idF2])

	// The page alone is refused by the server's adapter.
	_, err = formats.Codex{}.Parse([]byte(f2))
	require.ErrorContains(t, err, "history_base")
}

func TestReconstructCodexFailsOnMissingAmbiguousOrMisplacedBase(t *testing.T) {
	t.Parallel()
	build := func(t *testing.T, cutDelta, ordDelta int64, copies int, copyDiffers bool) (CodexRollout, map[string][]CodexRollout) {
		w := &rolloutWriter{dir: t.TempDir()}
		p := w.meta(idP, 0, nil)
		one, o := w.turn("ONE?", "ONE", 1)
		p += one
		cut := int64(len(p))
		two, _ := w.turn("TWO?", "TWO", o)
		p += two
		for i := range copies {
			body := p
			if i > 0 && copyDiffers {
				body = strings.Replace(p, "ONE?", "UNO?", 1)
			}
			w.write(t, fmt.Sprintf("2026-09-11T08-00-0%d", i), idP, body)
		}
		f := w.meta(idF1, o, map[string]any{"thread_id": idP, "end_ordinal_exclusive": o + ordDelta, "end_byte_offset": cut + cutDelta})
		x, _ := w.turn("X?", "X", o+1)
		w.write(t, "2026-09-11T08-10-00", idF1, f+x)
		rs, err := ScanCodex(w.dir)
		require.NoError(t, err)
		for _, r := range rs {
			if r.ThreadID == idF1 {
				return r, IndexCodex(rs)
			}
		}
		t.Fatal("no fork")
		return CodexRollout{}, nil
	}
	cases := map[string]struct {
		cutDelta, ordDelta int64
		copies             int
		differs            bool
		want               string
	}{
		"missing base":          {copies: 0, want: "missing base"},
		"ambiguous base":        {copies: 2, differs: true, want: "ambiguous base"},
		"cut inside a record":   {cutDelta: -5, copies: 1, want: "inside a record"},
		"ordinal does not fit":  {ordDelta: 1, copies: 1, want: "end_ordinal_exclusive"},
		"cut past the base end": {cutDelta: 1 << 20, copies: 1, want: "past its end"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			page, idx := build(t, c.cutDelta, c.ordDelta, c.copies, c.differs)
			_, err := ReconstructCodex(page, idx)
			var le *LineageError
			require.ErrorAs(t, err, &le)
			require.Contains(t, err.Error(), c.want)
		})
	}
	// Identical copies of the base (say a backup) are not ambiguous.
	page, idx := build(t, 0, 0, 2, false)
	_, err := ReconstructCodex(page, idx)
	require.NoError(t, err)
}

func TestNewestPagePerThread(t *testing.T) {
	t.Parallel()
	rs := []CodexRollout{
		{Path: "a", ThreadID: "t1", Stamp: "2026-01-01T00-00-00"},
		{Path: "b", ThreadID: "t1", Stamp: "2026-01-02T00-00-00"},
		{Path: "c", ThreadID: "t2", Stamp: "2026-01-01T00-00-00"},
	}
	got := NewestPages(rs)
	require.Len(t, got, 2)
	require.Equal(t, "b", got[0].Path)
	require.Equal(t, "c", got[1].Path)
}
