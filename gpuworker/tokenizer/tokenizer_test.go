package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"
)

// tinyTokenizer writes a small byte-level BPE tokenizer.json into a temp dir.
// Its vocab is the 256 byte tokens plus the merge results, in merge order.
func tinyTokenizer(t *testing.T, merges [][2]string, mutate func(m map[string]any)) string {
	t.Helper()
	vocab := map[string]int{}
	for b := range 256 {
		vocab[string(byteToRune[b])] = b
	}
	var mergeJSON []any
	for _, m := range merges {
		if _, ok := vocab[m[0]+m[1]]; !ok {
			vocab[m[0]+m[1]] = len(vocab)
		}
		mergeJSON = append(mergeJSON, []string{m[0], m[1]})
	}
	doc := map[string]any{
		"version":      "1.0",
		"added_tokens": []any{},
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwenPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"decoder": map[string]any{"type": "ByteLevel"},
		"model": map[string]any{
			"type": "BPE", "vocab": vocab, "merges": mergeJSON, "ignore_merges": false,
			"dropout": nil, "unk_token": nil, "continuing_subword_prefix": "", "end_of_word_suffix": "",
		},
	}
	if mutate != nil {
		mutate(doc)
	}
	dir := t.TempDir()
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), raw, 0o644))
	return dir
}

func id(t *testing.T, tok *Tokenizer, s string) int {
	t.Helper()
	v, ok := tok.TokenID(s)
	require.True(t, ok, "token %q", s)
	return v
}

func TestBPEMergeOrder(t *testing.T) {
	// Ranks decide, not left-to-right order: "bc" (rank 0) before "ab".
	dir := tinyTokenizer(t, [][2]string{{"b", "c"}, {"a", "b"}, {"a", "bc"}, {"Ġ", "a"}}, nil)
	tok, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, []int{id(t, tok, "abc")}, tok.Encode("abc"))
	require.Equal(t, []int{id(t, tok, "ab"), id(t, tok, "ab")}, tok.Encode("abab"))
	// Equal ranks: leftmost first ("aaa" -> "aa" "a" with merge a+a).
	dir = tinyTokenizer(t, [][2]string{{"a", "a"}}, nil)
	tok, err = Load(dir)
	require.NoError(t, err)
	require.Equal(t, []int{id(t, tok, "aa"), id(t, tok, "a")}, tok.Encode("aaa"))
	require.Equal(t, "aaa", tok.Decode(tok.Encode("aaa")))
	require.Equal(t, 257, tok.VocabSize())
}

func TestMergesStringFormatAndIgnoreMerges(t *testing.T) {
	dir := tinyTokenizer(t, [][2]string{{"h", "e"}, {"l", "l"}}, func(m map[string]any) {
		model := m["model"].(map[string]any)
		model["merges"] = []string{"h e", "l l"} // legacy "a b" form
		vocab := model["vocab"].(map[string]int)
		vocab["hello"] = 999 // reachable only through ignore_merges
		model["ignore_merges"] = true
	})
	tok, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, []int{999}, tok.Encode("hello"))
	require.Equal(t, []int{id(t, tok, "he"), id(t, tok, "ll")}, tok.Encode("hell"))
	require.Equal(t, 1000, tok.VocabSize())
}

func TestAddedTokenFlags(t *testing.T) {
	dir := tinyTokenizer(t, nil, func(m map[string]any) {
		m["added_tokens"] = []any{
			map[string]any{"id": 300, "content": "<s>", "special": true, "normalized": false},
			map[string]any{"id": 301, "content": "<sep>", "special": true, "normalized": false, "lstrip": true, "rstrip": true},
			map[string]any{"id": 302, "content": "cat", "special": false, "normalized": true, "single_word": true},
			map[string]any{"id": 303, "content": "café", "special": false, "normalized": true},
			map[string]any{"id": 304, "content": "<s><s>", "special": true, "normalized": false},
		}
	})
	tok, err := Load(dir)
	require.NoError(t, err)
	b := func(s string) []int { // byte tokens, no merges in this vocab
		var out []int
		for i := 0; i < len(s); i++ {
			out = append(out, id(t, tok, string(byteToRune[s[i]])))
		}
		return out
	}
	require.Equal(t, append(append(b("a"), 300), b("b")...), tok.Encode("a<s>b"))
	// Leftmost-longest: "<s><s>" beats two "<s>".
	require.Equal(t, []int{304, 300}, tok.Encode("<s><s><s>"))
	// lstrip/rstrip swallow the surrounding whitespace.
	require.Equal(t, append(append(b("a"), 301), b("b")...), tok.Encode("a  \t<sep>\n b"))
	// single_word: only when not inside a word.
	require.Equal(t, append(b("a "), 302), tok.Encode("a cat"))
	require.Equal(t, b("cats"), tok.Encode("cats"))
	require.Equal(t, b("bobcat"), tok.Encode("bobcat"))
	// normalized tokens match the NFC form of the text.
	require.Equal(t, []int{303}, tok.Encode("cafe\u0301"))
	require.Equal(t, "<s>", tok.Decode([]int{300}))
	require.Equal(t, 305, tok.VocabSize())
}

func TestConfigSpecialTokens(t *testing.T) {
	dir := tinyTokenizer(t, nil, func(m map[string]any) {
		m["added_tokens"] = []any{map[string]any{"id": 256, "content": "<|endoftext|>", "special": true}}
	})
	cfg := `{"eos_token": {"content": "<|im_end|>", "__type": "AddedToken"}, "pad_token": "<|endoftext|>",
	  "added_tokens_decoder": {"257": {"content": "<|im_end|>", "special": true, "normalized": false}}}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644))
	tok, err := Load(dir)
	require.NoError(t, err)
	eos, ok := tok.EOSTokenID()
	require.True(t, ok)
	require.Equal(t, 257, eos)
	pad, ok := tok.PadTokenID()
	require.True(t, ok)
	require.Equal(t, 256, pad)
	require.Equal(t, []int{257}, tok.Encode("<|im_end|>"))
	require.Equal(t, 258, tok.VocabSize())

	// Two config-only entries of one content: the lower id wins on every
	// load, whatever order Go walks the map in.
	twice := tinyTokenizer(t, nil, nil)
	cfg = `{"added_tokens_decoder": {"259": {"content": "<x>", "special": true}, "257": {"content": "<x>", "special": true}, "258": {"content": "<x>", "special": true}}}`
	require.NoError(t, os.WriteFile(filepath.Join(twice, "tokenizer_config.json"), []byte(cfg), 0o644))
	for range 20 {
		tok, err = Load(twice)
		require.NoError(t, err)
		require.Equal(t, []int{257}, tok.Encode("<x>"))
	}

	noCfg := tinyTokenizer(t, nil, nil)
	tok, err = Load(noCfg)
	require.NoError(t, err)
	_, ok = tok.EOSTokenID()
	require.False(t, ok)
	_, ok = tok.PadTokenID()
	require.False(t, ok)
}

func TestGPT2StyleByteLevelRegex(t *testing.T) {
	dir := tinyTokenizer(t, [][2]string{{"Ġ", "w"}, {"o", "r"}, {"Ġw", "or"}}, func(m map[string]any) {
		m["normalizer"] = nil
		m["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}
	})
	tok, err := Load(dir)
	require.NoError(t, err)
	// add_prefix_space turns "wor" into " wor" -> "Ġwor".
	require.Equal(t, []int{id(t, tok, "Ġwor")}, tok.Encode("wor"))
	require.Equal(t, " wor wor", tok.Decode(tok.Encode("wor wor")))
}

func TestLoadErrors(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope"))
	require.ErrorContains(t, err, filepath.Join("nope", "tokenizer.json"))

	for _, typ := range []string{"WordPiece", "Unigram"} {
		dir := t.TempDir()
		doc := `{"model": {"type": "` + typ + `", "vocab": [["a", 0.0]], "unk_id": 0}, "added_tokens": []}`
		if typ == "WordPiece" {
			doc = `{"model": {"type": "WordPiece", "vocab": {"a": 0}, "unk_token": "[UNK]"}, "added_tokens": []}`
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(doc), 0o644))
		_, err := Load(dir)
		require.ErrorContains(t, err, typ)
	}

	dir := tinyTokenizer(t, nil, func(m map[string]any) {
		m["pre_tokenizer"] = map[string]any{"type": "Whitespace"}
	})
	_, err = Load(dir)
	require.ErrorContains(t, err, "Whitespace")
}

// TestMatchersAgreeWithRegexp2 checks the hand-written matchers against a
// general backtracking engine on random strings over every character class.
// regexp2's \s, \p{L}, \p{N} are the same sets as Oniguruma's; its (?i) does
// not fold U+017F to 's', so that one character is left out here (see
// TestLongSContraction).
func TestMatchersAgreeWithRegexp2(t *testing.T) {
	alphabet := []rune("  \t\n\r\v\u0085\u00a0\u3000\u2028'sStTrReEvVmMlLdDaZé中ー٣1234567890!?.,-_\"…😀\u0301\u200d")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, pat := range []string{qwenPattern, llama3Pattern, gpt2Pattern} {
		hand, err := matcherFor(pat)
		require.NoError(t, err)
		ref, err := newRegexMatcher(pat)
		require.NoError(t, err)
		for range 3000 {
			rs := make([]rune, 1+rng.IntN(30))
			for k := range rs {
				rs[k] = alphabet[rng.IntN(len(alphabet))]
			}
			s := string(rs)
			require.Equal(t, ref.findAll(s, nil), hand.findAll(s, nil), "pattern %q on %q", pat, s)
		}
	}
}

func TestRegexMatcherByteOffsetsOnAstralRunes(t *testing.T) {
	m, err := newRegexMatcher(`\p{So}+|\p{L}+`)
	require.NoError(t, err)
	s := "a😀😀b👍🏽c"
	var got []string
	for _, sp := range m.findAll(s, nil) {
		got = append(got, s[sp[0]:sp[1]])
	}
	require.Equal(t, []string{"a", "😀😀", "b", "👍", "c"}, got) // 🏽 is Sk, not So
	// An unknown pattern goes through regexp2 inside a real tokenizer too.
	dir := tinyTokenizer(t, nil, func(m map[string]any) {
		m["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["pattern"] = map[string]any{"Regex": `\p{So}+|[^\p{So}]+`}
	})
	tok, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, s, tok.Decode(tok.Encode(s)))
}

func TestLongSContraction(t *testing.T) {
	// Oniguruma's (?i:'s) matches "'ſ" (U+017F folds to s), so HF's Rust
	// tokenizers split "'ſx" as "'ſ" + "x". tokenizers.js folds ASCII only.
	var got []string
	s := "'ſx 'Sx"
	for _, sp := range (llamaMatcher{maxDigits: 1}).findAll(s, nil) {
		got = append(got, s[sp[0]:sp[1]])
	}
	require.Equal(t, []string{"'ſ", "x", " '", "Sx"}, got)
}

func TestSplitBehaviors(t *testing.T) {
	m, err := newRegexMatcher(`-`)
	require.NoError(t, err)
	run := func(b splitBehavior, invert bool) []string {
		return (&splitStep{m: m, behavior: b, invert: invert}).split("a-b--c-", nil)
	}
	require.Equal(t, []string{"a", "-", "b", "-", "-", "c", "-"}, run(behaviorIsolated, false))
	require.Equal(t, []string{"a", "b", "c"}, run(behaviorRemoved, false))
	require.Equal(t, []string{"a-", "b-", "-", "c-"}, run(behaviorMergedWithPrevious, false))
	require.Equal(t, []string{"a", "-b", "-", "-c", "-"}, run(behaviorMergedWithNext, false))
	require.Equal(t, []string{"a", "-", "b", "--", "c", "-"}, run(behaviorContiguous, false))
}

func TestLossyUTF8(t *testing.T) {
	cases := map[string]string{
		"ok":                 "ok",
		"\xe2\x82":           "\uFFFD",             // truncated 3-byte sequence: one U+FFFD
		"\xe2\x82a":          "\uFFFDa",            //
		"\xff\xfe":           "\uFFFD\uFFFD",       // two invalid bytes: two
		"\xf0\x9f\x98":       "\uFFFD",             // truncated emoji
		"\xed\xa0\x80":       "\uFFFD\uFFFD\uFFFD", // surrogate: ED then A0 is out of range
		"a\xc3":              "a\uFFFD",
		"\xf4\x90\x80\x80":   "\uFFFD\uFFFD\uFFFD\uFFFD",
		"\xe0\x80":           "\uFFFD\uFFFD",
		"x\xf0\x9f\x98\x80y": "x😀y",
	}
	for in, want := range cases {
		require.Equal(t, want, lossyUTF8([]byte(in)), "%q", in)
	}
}

func TestNormalizeWithoutStreamSafeCGJ(t *testing.T) {
	zalgo := "e" + strings.Repeat("\u0301", 40) + "x" + strings.Repeat("\u0316\u0301", 20)
	for _, f := range []norm.Form{norm.NFC, norm.NFD, norm.NFKC, norm.NFKD} {
		got := normalize(f, zalgo)
		require.NotContains(t, got, string(cgj))
		require.Equal(t, utf8.RuneCountInString(zalgo)-map[norm.Form]int{norm.NFC: 1, norm.NFKC: 1}[f], utf8.RuneCountInString(got))
	}
	require.True(t, strings.HasPrefix(normalize(norm.NFC, zalgo), "é"))
	// The slow path agrees with x/text wherever x/text inserts no CGJ.
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []rune("aeouAEOUnNcCsS\u0300\u0301\u0302\u0303\u0308\u0316\u0327\u0328\u05b0\u05bc\u1100\u1161\u11a8가ﬁ²Å\u212bΩ")
	for range 2000 {
		rs := make([]rune, 1+rng.IntN(12))
		for k := range rs {
			rs[k] = alphabet[rng.IntN(len(alphabet))]
		}
		s := string(rs)
		for _, f := range []norm.Form{norm.NFC, norm.NFD, norm.NFKC, norm.NFKD} {
			require.Equal(t, f.String(s), normalizeSlow(f, s), "form %v on %+q", f, s)
		}
	}
}

func TestRegexp2Available(t *testing.T) {
	// regexp2 must compile Qwen's pattern: it is the fallback engine.
	_, err := regexp2.Compile(qwenPattern, regexp2.None)
	require.NoError(t, err)
}
