package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of tokenizer.json's added_tokens.
type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// addedMatcher finds added tokens in text with the semantics of HF's
// AddedVocabulary::find_matches: an Aho-Corasick search in leftmost-longest
// mode, then the single_word / lstrip / rstrip adjustments per match. The
// token lists are short (tens to a few hundred), so a byte trie probed only
// at bytes that can start a token is as fast as a full automaton here.
type addedMatcher struct {
	first [256]bool
	nodes []trieNode
}

type trieNode struct {
	next map[byte]int32
	tok  *addedToken // token ending here, if any
}

func newAddedMatcher(tokens []*addedToken, patterns []string) *addedMatcher {
	m := &addedMatcher{nodes: []trieNode{{}}}
	for k, tok := range tokens {
		p := patterns[k]
		if p == "" {
			continue
		}
		m.first[p[0]] = true
		n := int32(0)
		for i := 0; i < len(p); i++ {
			c := p[i]
			nx, ok := m.nodes[n].next[c]
			if !ok {
				if m.nodes[n].next == nil {
					m.nodes[n].next = map[byte]int32{}
				}
				nx = int32(len(m.nodes))
				m.nodes[n].next[c] = nx
				m.nodes = append(m.nodes, trieNode{})
			}
			n = nx
		}
		if m.nodes[n].tok == nil { // first declaration wins on duplicates
			m.nodes[n].tok = tok
		}
	}
	return m
}

func (m *addedMatcher) empty() bool { return len(m.nodes) == 1 }

// longestAt returns the longest token starting at s[i], if any.
func (m *addedMatcher) longestAt(s string, i int) (*addedToken, int) {
	var best *addedToken
	end := 0
	n := int32(0)
	for j := i; j < len(s); j++ {
		nx, ok := m.nodes[n].next[s[j]]
		if !ok {
			break
		}
		n = nx
		if t := m.nodes[n].tok; t != nil {
			best, end = t, j+1
		}
	}
	return best, end
}

// split calls emit for every segment of s in order: plain text with tok ==
// nil, or an added token (whose span includes any whitespace it strips).
func (m *addedMatcher) split(s string, emit func(seg string, tok *addedToken)) {
	if m.empty() || s == "" {
		if s != "" {
			emit(s, nil)
		}
		return
	}
	startOffset := 0
	for i := 0; i < len(s); {
		if !m.first[s[i]] {
			i++
			continue
		}
		tok, stop := m.longestAt(s, i)
		if tok == nil {
			i++
			continue
		}
		start := i
		i = stop // the search resumes after the raw match, as find_iter does
		if tok.SingleWord {
			before, _ := utf8.DecodeLastRuneInString(s[:start])
			after, _ := utf8.DecodeRuneInString(s[stop:])
			if (start > 0 && isWordChar(before)) || (stop < len(s) && isWordChar(after)) {
				continue
			}
		}
		if tok.LStrip {
			start = max(len(strings.TrimRightFunc(s[:start], unicode.IsSpace)), startOffset)
		}
		if tok.RStrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
			i = stop // never rescan stripped whitespace (HF would emit overlapping splits)
		}
		if start < startOffset {
			continue
		}
		if start > startOffset {
			emit(s[startOffset:start], nil)
		}
		emit(s[start:stop], tok)
		startOffset = stop
	}
	if startOffset < len(s) {
		emit(s[startOffset:], nil)
	}
}

// isWordChar is Rust regex's Unicode \w (HF checks single_word boundaries
// with `\w$` / `^\w`): Alphabetic, marks, decimal digits, connector
// punctuation and the ZWJ/ZWNJ join controls.
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r) ||
		unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r) ||
		unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Join_Control, r)
}
