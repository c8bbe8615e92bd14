package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/criticml/critic/gpuworker/tokenizer/tokenizertest"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"
)

// TestQwen3Parity requires our ids to equal those of an independent
// implementation (@huggingface/tokenizers from npm) on Qwen3's real
// tokenizer.json for every text of the committed corpus.
func TestQwen3Parity(t *testing.T) {
	parity := tokenizertest.ParityDir(t)
	qdir := tokenizertest.Qwen3Dir(t)
	corpus := readCorpus(t)

	f, err := os.Open(filepath.FromSlash(corpusPath))
	require.NoError(t, err)
	defer f.Close()
	cmd := exec.Command("node", filepath.Join(parity, "reference.mjs"), qdir)
	cmd.Stdin = f
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "reference.mjs: %s", stderr.String())
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	require.Len(t, lines, len(corpus), "reference output lines")

	tok, err := Load(qdir)
	require.NoError(t, err)

	mismatches := 0
	var first string
	for i, e := range corpus {
		var want []int
		require.NoError(t, json.Unmarshal([]byte(lines[i]), &want), "reference line %d", i+1)
		if want == nil {
			want = []int{}
		}
		got := tok.Encode(e.Text)
		if !equalInts(got, want) {
			mismatches++
			if first == "" {
				first = fmt.Sprintf("corpus line %d (%s): %q\n  got  %v\n       %q\n  want %v\n       %q",
					i+1, e.Kind, e.Text, got, tok.pieces(got), want, tok.pieces(want))
			}
		}
	}
	require.Zero(t, mismatches, "%d of %d texts differ from @huggingface/tokenizers; first:\n%s", mismatches, len(corpus), first)
	t.Logf("%d/%d corpus texts encode to identical ids", len(corpus), len(corpus))

	// Decode(Encode(x)) == x whenever normalization does not change x.
	stable := 0
	for i, e := range corpus {
		if !norm.NFC.IsNormalString(e.Text) {
			continue
		}
		stable++
		require.Equal(t, e.Text, tok.Decode(tok.Encode(e.Text)), "round trip of corpus line %d (%s)", i+1, e.Kind)
	}
	t.Logf("%d NFC-stable texts round-trip exactly", stable)
}

// pieces shows each id's decoded bytes, for mismatch reports.
func (t *Tokenizer) pieces(ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		if id >= 0 && id < len(t.dense) {
			out[i] = string(t.dense[id])
		} else {
			out[i] = fmt.Sprintf("<id %d?>", id)
		}
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestQwen3Specials(t *testing.T) {
	tok := loadQwen3(t)
	eos, ok := tok.EOSTokenID()
	require.True(t, ok)
	require.Equal(t, 151645, eos) // <|im_end|>
	pad, ok := tok.PadTokenID()
	require.True(t, ok)
	require.Equal(t, 151643, pad) // <|endoftext|>
	require.Equal(t, 151669, tok.VocabSize())
	id, ok := tok.TokenID("<think>")
	require.True(t, ok)
	require.Equal(t, 151667, id)
	id, ok = tok.TokenID("Ġworld")
	require.True(t, ok)
	require.Equal(t, 1879, id)
	_, ok = tok.TokenID("no such token")
	require.False(t, ok)
	require.Equal(t, []int{151644, 872, 198, 6023, 151645}, tok.Encode("<|im_start|>user\nhi<|im_end|>"))
	require.Empty(t, tok.Encode(""))
	// A character cut between ids decodes like HF: one U+FFFD per maximal
	// invalid subsequence.
	ids := tok.Encode("😀")
	require.Equal(t, "😀", tok.Decode(ids))
	if len(ids) > 1 {
		require.Equal(t, "\uFFFD", tok.Decode(ids[:1]))
	}
}

var (
	qwenOnce sync.Once
	qwenTok  *Tokenizer
	qwenErr  error
)

func loadQwen3(t testing.TB) *Tokenizer {
	dir := tokenizertest.Qwen3Dir(t)
	qwenOnce.Do(func() { qwenTok, qwenErr = Load(dir) })
	require.NoError(t, qwenErr)
	return qwenTok
}

// mixedText returns about n bytes of corpus text (all kinds, cycled).
func mixedText(t testing.TB, n int) string {
	corpus := readCorpus(t)
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(corpus[i%len(corpus)].Text)
		b.WriteByte('\n')
	}
	return b.String()[:n]
}

// BenchmarkEncode1MB encodes 1 MB of mixed corpus text per op. After the
// first op the per-word cache is warm, as in training, where one tokenizer
// encodes a whole dataset.
func BenchmarkEncode1MB(b *testing.B) {
	tok := loadQwen3(b)
	text := mixedText(b, 1<<20)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		tok.Encode(text)
	}
}

// BenchmarkEncode1MBCold clears the word cache before each op: the worst
// case, every word merged from bytes.
func BenchmarkEncode1MBCold(b *testing.B) {
	tok := loadQwen3(b)
	text := mixedText(b, 1<<20)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		tok.model.mu.Lock()
		clear(tok.model.cache)
		tok.model.mu.Unlock()
		b.StartTimer()
		tok.Encode(text)
	}
}

func BenchmarkLoadQwen3(b *testing.B) {
	dir := tokenizertest.Qwen3Dir(b)
	for b.Loop() {
		_, err := Load(dir)
		require.NoError(b, err)
	}
}

// TestConcurrentEncode: one Tokenizer is shared by data-loader goroutines.
func TestConcurrentEncode(t *testing.T) {
	tok := loadQwen3(t)
	corpus := readCorpus(t)
	want := make([][]int, len(corpus))
	for i, e := range corpus {
		want[i] = tok.Encode(e.Text)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := range corpus {
				i := (k*7 + g*131) % len(corpus)
				if !equalInts(tok.Encode(corpus[i].Text), want[i]) {
					errs <- corpus[i].Text
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("concurrent encode differs on %q", e)
	}
}
