// Package tokenizer reads Hugging Face tokenizer.json files and encodes text
// to ids exactly as HF's `tokenizers` library does, in pure Go.
//
// Why not an existing Go tokenizer: the reward model must see the same ids
// the base model was trained with, and the popular Go ports either cannot
// compile Qwen's lookahead pre-tokenizer regex or skip it. This package
// supports the family the engine needs (byte-level BPE: Qwen2/2.5/3,
// Llama-3, GPT-2 style), hand-writes the matchers for their regexes, and is
// checked id-for-id against an independent implementation (see
// TestQwen3Parity).
//
// A Tokenizer is safe for concurrent use.
package tokenizer

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Tokenizer encodes text to token ids and back.
type Tokenizer struct {
	normalizers []norm.Form
	steps       []preStep
	model       *bpe

	rawAdded  *addedMatcher // added tokens matched on the raw text
	normAdded *addedMatcher // added tokens matched on normalized text

	vocab     map[string]int // token string (byte-level alphabet) -> id
	added     map[string]int // added token content -> id
	dense     [][]byte       // decoded bytes per id, index = id
	vocabSize int

	eosID, padID int // -1 when absent
}

// Load reads tokenizer.json (+ tokenizer_config.json when present) from a
// model directory, as downloaded from the Hugging Face hub.
func Load(dir string) (*Tokenizer, error) {
	path := filepath.Join(dir, "tokenizer.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("tokenizer: %s not found: %w", path, err)
		}
		return nil, fmt.Errorf("tokenizer: reading %s: %w", path, err)
	}
	var cfg *tokenizerConfig
	cpath := filepath.Join(dir, "tokenizer_config.json")
	if craw, err := os.ReadFile(cpath); err == nil {
		cfg = &tokenizerConfig{}
		if err := json.Unmarshal(craw, cfg); err != nil {
			return nil, fmt.Errorf("tokenizer: parsing %s: %w", cpath, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tokenizer: reading %s: %w", cpath, err)
	}
	t, err := build(raw, cfg)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	return t, nil
}

// Encode returns the ids of text without adding any special tokens (no
// BOS/EOS), like HF's `tokenizer.encode(text, add_special_tokens=False)`.
// Added and special tokens written in the text ("<|im_end|>") are still
// recognised as single ids, as HF does by default. Invalid UTF-8 is encoded
// byte for byte (HF strings cannot hold it at all).
func (t *Tokenizer) Encode(text string) []int {
	ids := make([]int, 0, len(text)/3+4)
	var pieces []string
	encodeNormalized := func(seg string, tok *addedToken) {
		if tok != nil {
			ids = append(ids, tok.ID)
			return
		}
		pieces = append(pieces[:0], seg)
		for _, st := range t.steps {
			var next []string
			for _, p := range pieces {
				next = st.split(p, next)
			}
			pieces = next
		}
		for _, p := range pieces {
			ids = t.model.encode(p, ids)
		}
	}
	t.rawAdded.split(text, func(seg string, tok *addedToken) {
		if tok != nil {
			ids = append(ids, tok.ID)
			return
		}
		for _, f := range t.normalizers {
			seg = normalize(f, seg)
		}
		t.normAdded.split(seg, encodeNormalized)
	})
	return ids
}

// Decode turns ids back into text like HF's `tokenizer.decode(ids)` with
// default options: special tokens are kept, unknown ids are skipped, and
// byte sequences that are not valid UTF-8 (a character cut between two
// ids) become U+FFFD per maximal invalid subsequence.
func (t *Tokenizer) Decode(ids []int) string {
	var buf []byte
	for _, id := range ids {
		if id >= 0 && id < len(t.dense) {
			buf = append(buf, t.dense[id]...)
		}
	}
	return lossyUTF8(buf)
}

// VocabSize is the embedding-table size the ids need: max id + 1 over the
// model vocabulary and the added tokens.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// TokenID looks up a token by its vocabulary spelling (byte-level alphabet,
// e.g. "Ġhello") or an added token by its content ("<|im_end|>").
func (t *Tokenizer) TokenID(token string) (int, bool) {
	if id, ok := t.added[token]; ok {
		return id, true
	}
	id, ok := t.vocab[token]
	return id, ok
}

// EOSTokenID is tokenizer_config.json's eos_token: "<|im_end|>" for Qwen3
// instruct models, "<|endoftext|>" for base models.
func (t *Tokenizer) EOSTokenID() (int, bool) { return t.eosID, t.eosID >= 0 }

// PadTokenID is tokenizer_config.json's pad_token ("<|endoftext|>" for Qwen3).
// The reward model scores the last non-pad token, so this must be exact.
func (t *Tokenizer) PadTokenID() (int, bool) { return t.padID, t.padID >= 0 }

// tokenizerJSON is the subset of tokenizer.json this package reads.
type tokenizerJSON struct {
	AddedTokens  []*addedToken   `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        struct {
		Type                    string          `json:"type"`
		Vocab                   json.RawMessage `json:"vocab"`
		Merges                  []mergeEntry    `json:"merges"`
		IgnoreMerges            bool            `json:"ignore_merges"`
		Dropout                 *float64        `json:"dropout"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	} `json:"model"`
}

// mergeEntry accepts both merge encodings HF has used: "a b" (before
// tokenizers 0.20) and ["a", "b"] (which allows spaces inside tokens).
type mergeEntry [2]string

func (m *mergeEntry) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		left, right, ok := strings.Cut(s, " ")
		if !ok {
			return fmt.Errorf("merge %q is not two space-separated tokens", s)
		}
		m[0], m[1] = left, right
		return nil
	}
	var pair []string
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	if len(pair) != 2 {
		return fmt.Errorf("merge %v is not a pair", pair)
	}
	m[0], m[1] = pair[0], pair[1]
	return nil
}

// tokenizerConfig is the subset of tokenizer_config.json this package reads.
type tokenizerConfig struct {
	EOSToken           specialTokenRef        `json:"eos_token"`
	PadToken           specialTokenRef        `json:"pad_token"`
	AddedTokensDecoder map[string]*addedToken `json:"added_tokens_decoder"`
}

// specialTokenRef is a token written either as a plain string or, in older
// configs, as a serialized AddedToken object {"content": ...}.
type specialTokenRef string

func (s *specialTokenRef) UnmarshalJSON(b []byte) error {
	var str *string
	if err := json.Unmarshal(b, &str); err == nil {
		if str != nil {
			*s = specialTokenRef(*str)
		}
		return nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	*s = specialTokenRef(obj.Content)
	return nil
}

type typed struct {
	Type string `json:"type"`
}

func build(raw []byte, cfg *tokenizerConfig) (*Tokenizer, error) {
	var tj tokenizerJSON
	if err := json.Unmarshal(raw, &tj); err != nil {
		// A non-BPE model has a differently shaped vocab/merges: name it.
		var probe struct {
			Model typed `json:"model"`
		}
		if json.Unmarshal(raw, &probe) == nil && probe.Model.Type != "" && probe.Model.Type != "BPE" {
			return nil, unsupportedModel(probe.Model.Type)
		}
		return nil, fmt.Errorf("parsing: %w", err)
	}
	mt := tj.Model.Type
	if mt == "" && tj.Model.Merges != nil {
		mt = "BPE" // files written before the type tag existed
	}
	if mt != "BPE" {
		return nil, unsupportedModel(mt)
	}
	if p := tj.Model.ContinuingSubwordPrefix; p != nil && *p != "" {
		return nil, fmt.Errorf("BPE continuing_subword_prefix %q is not supported", *p)
	}
	if p := tj.Model.EndOfWordSuffix; p != nil && *p != "" {
		return nil, fmt.Errorf("BPE end_of_word_suffix %q is not supported", *p)
	}
	if d := tj.Model.Dropout; d != nil && *d > 0 {
		// HF applies dropout at encode time, making ids random; that is a
		// training-time augmentation, never what a reward model wants.
		return nil, fmt.Errorf("BPE dropout %v is not supported", *d)
	}

	t := &Tokenizer{eosID: -1, padID: -1, added: map[string]int{}}
	var err error
	if t.normalizers, err = parseNormalizer(tj.Normalizer); err != nil {
		return nil, err
	}
	byteLevel := false
	if t.steps, byteLevel, err = parsePreTokenizer(tj.PreTokenizer); err != nil {
		return nil, err
	}
	if !byteLevel {
		return nil, errors.New("only byte-level BPE is supported: the pre_tokenizer has no ByteLevel step")
	}
	if err := checkDecoder(tj.Decoder); err != nil {
		return nil, err
	}

	if err := json.Unmarshal(tj.Model.Vocab, &t.vocab); err != nil {
		return nil, fmt.Errorf("BPE vocab: %w", err)
	}
	maxID := -1
	for _, id := range t.vocab {
		maxID = max(maxID, id)
	}

	// Added tokens: tokenizer.json's list, plus any entry that only
	// tokenizer_config.json's added_tokens_decoder declares (transformers
	// registers those too when it loads the tokenizer).
	addedTokens := tj.AddedTokens
	if cfg != nil {
		seen := map[int]bool{}
		for _, a := range addedTokens {
			seen[a.ID] = true
		}
		var extra []*addedToken
		for key, a := range cfg.AddedTokensDecoder {
			var id int
			if _, err := fmt.Sscan(key, &id); err != nil || seen[id] || a == nil || a.Content == "" {
				continue
			}
			a.ID = id
			extra = append(extra, a)
		}
		// By id, as transformers reads them: a map's order would let two
		// entries of one content take turns at which id wins.
		slices.SortFunc(extra, func(a, b *addedToken) int { return cmp.Compare(a.ID, b.ID) })
		addedTokens = append(addedTokens, extra...)
	}
	var rawToks, normToks []*addedToken
	var rawPats, normPats []string
	for _, a := range addedTokens {
		if a.Content == "" {
			continue
		}
		if _, dup := t.added[a.Content]; !dup {
			t.added[a.Content] = a.ID
		}
		maxID = max(maxID, a.ID)
		if a.Normalized {
			pat := a.Content
			for _, f := range t.normalizers {
				pat = normalize(f, pat)
			}
			normToks, normPats = append(normToks, a), append(normPats, pat)
		} else {
			rawToks, rawPats = append(rawToks, a), append(rawPats, a.Content)
		}
	}
	t.rawAdded = newAddedMatcher(rawToks, rawPats)
	t.normAdded = newAddedMatcher(normToks, normPats)
	t.vocabSize = maxID + 1

	if t.model, err = newBPE(t.vocab, tj.Model.Merges, tj.Model.IgnoreMerges); err != nil {
		return nil, err
	}

	// Decoding table. Added tokens win over a vocab entry with the same id,
	// as in HF's id_to_token.
	if maxID > math.MaxInt32 {
		return nil, fmt.Errorf("token id %d out of range", maxID)
	}
	t.dense = make([][]byte, maxID+1)
	for tok, id := range t.vocab {
		if id >= 0 {
			t.dense[id], _ = byteLevelToBytes(tok)
		}
	}
	for _, a := range addedTokens {
		if a.ID >= 0 && a.Content != "" {
			t.dense[a.ID], _ = byteLevelToBytes(a.Content)
		}
	}

	if cfg != nil {
		t.eosID, t.padID = t.specialID(cfg.EOSToken), t.specialID(cfg.PadToken)
	}
	return t, nil
}

// specialID is the id of a special token tokenizer_config.json names, -1 when it
// names none or one the tokenizer does not know.
func (t *Tokenizer) specialID(tok specialTokenRef) int {
	if id, ok := t.TokenID(string(tok)); ok && tok != "" {
		return id
	}
	return -1
}

func unsupportedModel(typ string) error {
	return fmt.Errorf("model type %q is not supported: only byte-level BPE tokenizers are (WordPiece and Unigram are not)", cmp.Or(typ, "(none)"))
}

func newBPE(vocab map[string]int, merges []mergeEntry, ignoreMerges bool) (*bpe, error) {
	m := &bpe{
		merges:       make(map[uint64]merge, len(merges)),
		ignoreMerges: ignoreMerges,
		cache:        map[string][]int32{},
	}
	for b := range 256 {
		id, ok := vocab[string(byteToRune[b])]
		if !ok {
			return nil, fmt.Errorf("byte-level BPE vocab lacks the token for byte 0x%02x (%q)", b, string(byteToRune[b]))
		}
		m.byteID[b] = int32(id)
	}
	for rank, mg := range merges {
		a, okA := vocab[mg[0]]
		b, okB := vocab[mg[1]]
		c, okC := vocab[mg[0]+mg[1]]
		if !okA || !okB || !okC {
			return nil, fmt.Errorf("merge %d (%q %q) uses a token missing from the vocab", rank, mg[0], mg[1])
		}
		k := pairKey(int32(a), int32(b))
		if _, dup := m.merges[k]; !dup { // the first (lowest) rank wins
			m.merges[k] = merge{rank: int32(rank), newID: int32(c)}
		}
	}
	if ignoreMerges {
		m.rawVocab = make(map[string]int32, len(vocab))
		for tok, id := range vocab {
			if b, ok := byteLevelToBytes(tok); ok {
				m.rawVocab[string(b)] = int32(id)
			}
		}
	}
	return m, nil
}

// normForms are the Unicode normalizers by their tokenizer.json type.
var normForms = map[string]norm.Form{"NFC": norm.NFC, "NFD": norm.NFD, "NFKC": norm.NFKC, "NFKD": norm.NFKD}

func parseNormalizer(raw json.RawMessage) ([]norm.Form, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var n struct {
		Type        string            `json:"type"`
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	if f, ok := normForms[n.Type]; ok {
		return []norm.Form{f}, nil
	}
	if n.Type == "Sequence" {
		var out []norm.Form
		for _, sub := range n.Normalizers {
			fs, err := parseNormalizer(sub)
			if err != nil {
				return nil, err
			}
			out = append(out, fs...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("normalizer type %q is not supported (NFC, NFD, NFKC, NFKD, Sequence are)", n.Type)
}

// parsePreTokenizer returns the pre-tokenizer steps and whether a ByteLevel
// step is among them.
func parsePreTokenizer(raw json.RawMessage) ([]preStep, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var p struct {
		Type           string            `json:"type"`
		Pretokenizers  []json.RawMessage `json:"pretokenizers"`
		Pattern        map[string]string `json:"pattern"`
		Behavior       string            `json:"behavior"`
		Invert         bool              `json:"invert"`
		AddPrefixSpace bool              `json:"add_prefix_space"`
		UseRegex       *bool             `json:"use_regex"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, false, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch p.Type {
	case "Sequence":
		var steps []preStep
		bl := false
		for _, sub := range p.Pretokenizers {
			s, b, err := parsePreTokenizer(sub)
			if err != nil {
				return nil, false, err
			}
			steps, bl = append(steps, s...), bl || b
		}
		return steps, bl, nil
	case "Split":
		var m matcher
		var err error
		if re, ok := p.Pattern["Regex"]; ok {
			m, err = matcherFor(re)
		} else if lit, ok := p.Pattern["String"]; ok {
			m, err = newRegexMatcher(regexpQuote(lit))
		} else {
			err = fmt.Errorf("pre_tokenizer Split has no Regex or String pattern")
		}
		if err != nil {
			return nil, false, err
		}
		b, known := splitBehaviors[p.Behavior]
		if !known {
			return nil, false, fmt.Errorf("tokenizer: unsupported Split behavior %q", p.Behavior)
		}
		return []preStep{&splitStep{m: m, behavior: b, invert: p.Invert}}, false, nil
	case "ByteLevel":
		useRegex := p.UseRegex == nil || *p.UseRegex // HF's default is true
		if !useRegex && !p.AddPrefixSpace {
			return nil, true, nil // the mapping alone: nothing to split here
		}
		return []preStep{&byteLevelStep{addPrefixSpace: p.AddPrefixSpace, useRegex: useRegex}}, true, nil
	}
	return nil, false, fmt.Errorf("pre_tokenizer type %q is not supported (Sequence, Split, ByteLevel are)", p.Type)
}

func checkDecoder(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var d typed
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("decoder: %w", err)
	}
	if d.Type != "ByteLevel" {
		return fmt.Errorf("decoder type %q is not supported (ByteLevel is)", d.Type)
	}
	return nil
}

// regexpQuote escapes a literal for regexp2 (.NET syntax).
func regexpQuote(s string) string {
	const special = `\*+?|{}[]()^$.#- `
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if strings.ContainsRune(special, r) {
			out = append(out, '\\')
		}
		out = append(out, r)
	}
	return string(out)
}
