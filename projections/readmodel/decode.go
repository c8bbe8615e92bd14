package readmodel

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/criticml/critic/domain/events"
)

// decodeImported decodes a trace.imported payload. The bulk of an import is
// these payloads, so the shape the event store gives back (known keys, steps
// of strings, integers and raw objects) is read by a small scanner in one
// pass; anything else (unknown or differently cased keys, numbers that are not
// plain integers, malformed JSON) goes through encoding/json as before, which
// stays the reference for what a payload means.
func decodeImported(e events.Envelope, p *importedTrace) error {
	if decodeImportedFast(e.Payload, p) {
		return nil
	}
	*p = importedTrace{}
	return e.DecodeOrFail(p)
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) expect(c byte) bool {
	if s.peek() != c {
		return false
	}
	s.i++
	return true
}

func (s *scanner) null() bool {
	if s.peek() == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// key reads an object key without escapes and the colon after it.
func (s *scanner) key() (string, bool) {
	if s.peek() != '"' {
		return "", false
	}
	j := bytes.IndexByte(s.b[s.i+1:], '"')
	if j < 0 {
		return "", false
	}
	k := s.b[s.i+1 : s.i+1+j]
	if bytes.IndexByte(k, '\\') >= 0 {
		return "", false
	}
	s.i += j + 2
	return string(k), s.expect(':')
}

// str reads a JSON string (or null, which leaves *dst as it is, like
// encoding/json). Strings with escapes or non-UTF-8 bytes are unquoted by
// encoding/json.
func (s *scanner) str(dst *string) bool {
	if s.null() {
		return true
	}
	if s.peek() != '"' {
		return false
	}
	start, plain, ascii := s.i, true, true
	for j := s.i + 1; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			body := s.b[start+1 : j]
			if plain && (ascii || utf8.Valid(body)) {
				*dst = string(body)
				return true
			}
			return json.Unmarshal(s.b[start:s.i], dst) == nil
		case c == '\\':
			plain = false
			j++
		case c < 0x20:
			return false
		case c >= 0x80:
			ascii = false
		}
	}
	return false
}

// int reads a plain JSON integer (or null).
func (s *scanner) int(dst *int) bool {
	if s.null() {
		return true
	}
	s.ws()
	j := s.i
	for j < len(s.b) && (s.b[j] == '-' || (s.b[j] >= '0' && s.b[j] <= '9')) {
		j++
	}
	if j < len(s.b) && (s.b[j] == '.' || s.b[j] == 'e' || s.b[j] == 'E') {
		return false
	}
	digits := s.b[s.i:j]
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) > 1 && digits[0] == '0' { // not JSON
		return false
	}
	n, err := strconv.ParseInt(string(s.b[s.i:j]), 10, strconv.IntSize)
	if err != nil {
		return false
	}
	*dst, s.i = int(n), j
	return true
}

// raw returns the next value's bytes, structurally skipped; whoever uses
// them checks them (jsonb parses them, encoding/json decodes them).
func (s *scanner) raw() ([]byte, bool) {
	s.ws()
	start := s.i
	if s.i >= len(s.b) {
		return nil, false
	}
	switch s.b[s.i] {
	case '{', '[':
		depth := 0
		for j := s.i; j < len(s.b); j++ {
			switch s.b[j] {
			case '"':
				for j++; j < len(s.b) && s.b[j] != '"'; j++ {
					if s.b[j] == '\\' {
						j++
					}
				}
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					s.i = j + 1
					return s.b[start:s.i], true
				}
			}
		}
		return nil, false
	case '"':
		var discard string
		if !s.str(&discard) {
			return nil, false
		}
		return s.b[start:s.i], true
	default:
		j := s.i
		for j < len(s.b) && bytes.IndexByte([]byte(",}] \t\n\r"), s.b[j]) < 0 {
			j++
		}
		if j == s.i || !json.Valid(s.b[s.i:j]) {
			return nil, false
		}
		s.i = j
		return s.b[start:j], true
	}
}

// object calls field for each key of the object at the cursor.
func (s *scanner) object(field func(key string) bool) bool {
	if !s.expect('{') {
		return false
	}
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		k, ok := s.key()
		if !ok || !field(k) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

func decodeImportedFast(b []byte, p *importedTrace) bool {
	*p = importedTrace{}
	s := &scanner{b: b}
	ok := s.object(func(k string) bool {
		switch k {
		case "trace_id":
			return s.str(&p.TraceID)
		case "external_id":
			return s.str(&p.ExternalID)
		case "title":
			return s.str(&p.Title)
		case "source_format":
			return s.str(&p.SourceFormat)
		case "source_id":
			return s.str(&p.SourceID)
		case "revision":
			return s.int(&p.Revision)
		case "metadata":
			if s.null() {
				p.Metadata = nil
				return true
			}
			raw, ok := s.raw()
			if !ok || p.Metadata != nil { // a repeated key merges maps in encoding/json
				return false
			}
			return events.Envelope{Payload: raw}.Decode(&p.Metadata) == nil // json.Number kept, as Decode does
		case "spans":
			raw, ok := s.raw()
			return ok && json.Unmarshal(raw, &p.Spans) == nil
		case "steps":
			if s.null() {
				p.Steps = nil
				return true
			}
			if p.Steps != nil || !s.expect('[') { // a repeated key reuses elements in encoding/json
				return false
			}
			p.Steps = make([]importedStep, 0, 32)
			if s.peek() == ']' {
				s.i++
				return true
			}
			for {
				var st importedStep
				if !s.object(func(k string) bool { return st.field(s, k) }) {
					return false
				}
				p.Steps = append(p.Steps, st)
				switch s.peek() {
				case ',':
					s.i++
				case ']':
					s.i++
					return true
				default:
					return false
				}
			}
		}
		return false // a key this path does not know: encoding/json decides
	})
	return ok && s.peek() == 0 && s.i == len(s.b)
}

func (st *importedStep) field(s *scanner, k string) bool {
	switch k {
	case "id":
		return s.str(&st.ID)
	case "index":
		return s.int(&st.Index)
	case "role":
		return s.str(&st.Role)
	case "content":
		return s.str(&st.Content)
	case "tool_name":
		return s.str(&st.ToolName)
	case "tool_call_id":
		return s.str(&st.ToolCallID)
	case "tool_input":
		raw, ok := s.raw()
		st.ToolInput = json.RawMessage(raw)
		return ok && json.Valid(raw)
	case "metadata":
		raw, ok := s.raw()
		st.Metadata = json.RawMessage(raw)
		return ok && json.Valid(raw)
	}
	return false
}
