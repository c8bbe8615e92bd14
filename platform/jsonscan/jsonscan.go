// Package jsonscan is the one fast path for the JSON shapes Critic reads and
// writes millions of times: bus envelopes, trace.imported payloads, import
// request bodies (reading) and envelopes on their way to the bus (writing).
//
// It is not a JSON library. A Scanner reads a value whose shape the caller
// knows, in one pass, without reflection, and reports false the moment it
// meets anything it would not decode exactly as encoding/json does (an
// unknown key, a number that is not a plain integer, a lone surrogate,
// malformed input); the caller then decodes the same bytes with
// encoding/json, which stays the reference for what the bytes mean. Callers
// keep a differential test and fuzz target against encoding/json.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner reads JSON from B starting at I.
type Scanner struct {
	B []byte
	I int
}

// New returns a scanner at the start of b.
func New(b []byte) *Scanner { return &Scanner{B: b} }

// SkipSpace returns the index of the first non-space byte at or after i.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// Peek returns the next non-space byte (0 at the end), skipping to it.
func (s *Scanner) Peek() byte {
	s.I = SkipSpace(s.B, s.I)
	if s.I < len(s.B) {
		return s.B[s.I]
	}
	return 0
}

// Expect consumes c, the next non-space byte, or reports false.
func (s *Scanner) Expect(c byte) bool {
	if s.Peek() != c {
		return false
	}
	s.I++
	return true
}

// End reports whether only whitespace remains.
func (s *Scanner) End() bool { return SkipSpace(s.B, s.I) == len(s.B) }

// Null consumes a null literal, if that is what comes next.
func (s *Scanner) Null() bool {
	if s.Peek() == 'n' && bytes.HasPrefix(s.B[s.I:], []byte("null")) {
		s.I += 4
		return true
	}
	return false
}

// Key reads an object key without escapes and the colon after it; the key
// is a slice of the input (compare it with switch string(k), which does not
// allocate). A key with escapes is refused: encoding/json matches keys
// case-insensitively after unescaping, which callers leave to it.
func (s *Scanner) Key() ([]byte, bool) {
	if s.Peek() != '"' {
		return nil, false
	}
	j := bytes.IndexByte(s.B[s.I+1:], '"')
	if j < 0 {
		return nil, false
	}
	k := s.B[s.I+1 : s.I+1+j]
	if bytes.IndexByte(k, '\\') >= 0 {
		return nil, false
	}
	s.I += j + 2
	return k, s.Expect(':')
}

// Str reads a JSON string into dst; null leaves dst as it is, as
// encoding/json does for a string field.
func (s *Scanner) Str(dst *string) bool {
	if s.Null() {
		return true
	}
	if s.Peek() != '"' {
		return false
	}
	v, j, ok := Unquote(s.B, s.I)
	if !ok {
		// Invalid UTF-8 or a lone surrogate: encoding/json substitutes
		// U+FFFD; let it, for this one string.
		end, ok := skipString(s.B, s.I)
		if !ok || json.Unmarshal(s.B[s.I:end], dst) != nil {
			return false
		}
		s.I = end
		return true
	}
	*dst, s.I = v, j
	return true
}

// Int64 reads a plain JSON integer (no fraction, no exponent); null leaves
// dst as it is.
func (s *Scanner) Int64(dst *int64) bool {
	if s.Null() {
		return true
	}
	s.I = SkipSpace(s.B, s.I)
	j := s.I
	if j < len(s.B) && s.B[j] == '-' {
		j++
	}
	digits := j
	for j < len(s.B) && s.B[j] >= '0' && s.B[j] <= '9' {
		j++
	}
	if j == digits || (j-digits > 1 && s.B[digits] == '0') { // no digits, or a leading zero: not JSON
		return false
	}
	if j < len(s.B) && (s.B[j] == '.' || s.B[j] == 'e' || s.B[j] == 'E') {
		return false
	}
	n, err := strconv.ParseInt(string(s.B[s.I:j]), 10, 64)
	if err != nil {
		return false
	}
	*dst, s.I = n, j
	return true
}

// Int is Int64 for an int field.
func (s *Scanner) Int(dst *int) bool {
	n := int64(*dst)
	if !s.Int64(&n) || int64(int(n)) != n {
		return false
	}
	*dst = int(n)
	return true
}

// Raw returns the next value's bytes, structurally skipped; whoever uses
// them checks them (jsonb parses them, encoding/json decodes them). Strings
// and scalars are validated.
func (s *Scanner) Raw() ([]byte, bool) {
	s.I = SkipSpace(s.B, s.I)
	start := s.I
	if s.I >= len(s.B) {
		return nil, false
	}
	switch s.B[s.I] {
	case '{', '[':
		depth := 0
		for j := s.I; j < len(s.B); j++ {
			switch s.B[j] {
			case '"':
				end, ok := skipString(s.B, j)
				if !ok {
					return nil, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					s.I = j + 1
					return s.B[start:s.I], true
				}
			}
		}
		return nil, false
	case '"':
		var discard string
		if !s.Str(&discard) {
			return nil, false
		}
		return s.B[start:s.I], true
	default:
		j := s.I
		for j < len(s.B) && bytes.IndexByte([]byte(",}] \t\n\r"), s.B[j]) < 0 {
			j++
		}
		if j == s.I || !json.Valid(s.B[s.I:j]) {
			return nil, false
		}
		s.I = j
		return s.B[start:j], true
	}
}

// Object calls field for each key of the object at the cursor; field reads
// the value (or reports false to give up).
func (s *Scanner) Object(field func(key []byte) bool) bool {
	return s.list('{', '}', func() bool {
		k, ok := s.Key()
		return ok && field(k)
	})
}

// Array calls elem for each element of the array at the cursor; elem reads
// the element (or reports false to give up).
func (s *Scanner) Array(elem func() bool) bool { return s.list('[', ']', elem) }

// list reads the comma-separated items between opening and closing, each
// with item.
func (s *Scanner) list(opening, closing byte, item func() bool) bool {
	if !s.Expect(opening) {
		return false
	}
	if s.Peek() == closing {
		s.I++
		return true
	}
	for {
		if !item() {
			return false
		}
		switch s.Peek() {
		case ',':
			s.I++
		case closing:
			s.I++
			return true
		default:
			return false
		}
	}
}

// skipString returns the index after the JSON string starting at b[i].
func skipString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return i, false
}

// Unquote decodes the JSON string at b[i] when it has no control bytes, no
// lone surrogate escapes and is valid UTF-8 (the cases where encoding/json
// substitutes or fails); it returns the index after it.
func Unquote(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", i, false
	}
	var out []byte
	ascii := true
	start := i + 1
	for j := start; j < len(b); j++ {
		c := b[j]
		switch {
		case c == '"':
			if out == nil {
				out = b[start:j]
			} else {
				out = append(out, b[start:j]...)
			}
			if !ascii && !utf8.Valid(out) {
				return "", i, false
			}
			return string(out), j + 1, true
		case c == '\\':
			if j+1 >= len(b) {
				return "", i, false
			}
			if out == nil {
				// Sized for this string, not for the rest of the input:
				// a payload holds many short escaped strings.
				end, ok := skipString(b, i)
				if !ok {
					return "", i, false
				}
				out = make([]byte, 0, end-i)
			}
			out = append(out, b[start:j]...)
			switch b[j+1] {
			case '"', '\\', '/':
				out = append(out, b[j+1])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(b, j+2)
				n := 6
				if utf16.IsSurrogate(r) {
					if r = utf16.DecodeRune(r, hex4At(b, j+6)); r == unicode.ReplacementChar {
						return "", i, false // a lone surrogate: encoding/json's rules apply
					}
					n = 12
				}
				if r < 0 {
					return "", i, false
				}
				out = utf8.AppendRune(out, r)
				j += n
				start = j
				j--
				continue
			default: // not JSON
				return "", i, false
			}
			j++
			start = j + 1
		case c < 0x20:
			return "", i, false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", i, false
}

// hex4 parses the 4 hex digits at b[i:] (-1 if they are not).
func hex4(b []byte, i int) rune {
	if i+4 > len(b) {
		return -1
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// hex4At parses `\uXXXX` at b[i:] (-1 if it is not one).
func hex4At(b []byte, i int) rune {
	if i+2 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return -1
	}
	return hex4(b, i+2)
}

// AppendString appends s as a JSON string. Plain printable ASCII (ids, types,
// stream names: nearly every string the relay writes) is copied as it is;
// anything else is escaped by encoding/json.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s) // rare: escapes, control bytes, non-ASCII
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
