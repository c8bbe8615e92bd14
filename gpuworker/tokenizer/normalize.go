package tokenizer

import (
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// cgj is U+034F COMBINING GRAPHEME JOINER.
const cgj = '\u034F'

// normalize applies a Unicode normalization form exactly as HF's tokenizers
// (Rust unicode-normalization) and ICU do. golang.org/x/text differs in one
// way: it emits the "Stream-Safe Text Format" of UAX #15, inserting a CGJ
// after every 30 consecutive non-starters, which would add tokens. That only
// happens on pathological input (e.g. "Zalgo" text), so the fast x/text path
// is kept and the result is redone by the textbook algorithm when a CGJ was
// inserted.
func normalize(f norm.Form, s string) string {
	out := f.String(s)
	if len(out) == len(s) && out == s {
		return out
	}
	if strings.Count(out, string(cgj)) == strings.Count(s, string(cgj)) {
		return out
	}
	return normalizeSlow(f, s)
}

// normalizeSlow is UAX #15 without stream-safe limits: full decomposition
// rune by rune, canonical ordering of non-starter runs, then (for NFC/NFKC)
// canonical composition.
func normalizeSlow(f norm.Form, s string) string {
	decomp, compose := norm.NFD, false
	switch f {
	case norm.NFC:
		compose = true
	case norm.NFKC:
		decomp, compose = norm.NFKD, true
	case norm.NFKD:
		decomp = norm.NFKD
	}
	// 1. Decompose. A single rune's decomposition is at most 18 runes, far
	// below x/text's stream-safe limit, so x/text is exact per rune.
	var d []rune
	var buf [utf8.UTFMax]byte
	for _, r := range s {
		n := utf8.EncodeRune(buf[:], r)
		d = append(d, []rune(decomp.String(string(buf[:n])))...)
	}
	ccc := func(r rune) uint8 {
		n := utf8.EncodeRune(buf[:], r)
		return norm.NFD.Properties(buf[:n]).CCC()
	}
	// 2. Canonical ordering: stable sort of each run of non-starters by CCC.
	for i := 0; i < len(d); {
		if ccc(d[i]) == 0 {
			i++
			continue
		}
		j := i
		for j < len(d) && ccc(d[j]) != 0 {
			j++
		}
		slices.SortStableFunc(d[i:j], func(a, b rune) int { return int(ccc(a)) - int(ccc(b)) })
		i = j
	}
	if !compose {
		return string(d)
	}
	// 3. Canonical composition.
	out := make([]rune, 0, len(d))
	starter := -1
	var lastCCC uint8
	for _, c := range d {
		cc := ccc(c)
		if starter >= 0 {
			adjacent := len(out)-1 == starter
			if adjacent || (lastCCC != 0 && lastCCC < cc) {
				if p, ok := primaryComposite(out[starter], c); ok {
					out[starter] = p
					continue
				}
			}
		}
		if cc == 0 {
			starter = len(out)
		}
		out = append(out, c)
		lastCCC = cc
	}
	return string(out)
}

// primaryComposite composes a pair with x/text: NFC of a two-rune string is
// one rune exactly when the pair has a primary composite.
func primaryComposite(a, b rune) (rune, bool) {
	c := norm.NFC.String(string([]rune{a, b}))
	if r, n := utf8.DecodeRuneInString(c); n == len(c) && r != utf8.RuneError {
		return r, true
	}
	return 0, false
}
