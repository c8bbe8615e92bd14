package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text from outside (imports, OTLP spans, comments, names, titles, ids, query
// parameters, anything a request or a model answer carries) is checked here,
// once, at the edge, and refused — never cleaned — when it holds what the
// stores cannot keep: PostgreSQL text and jsonb refuse U+0000 (even escaped
// as \u0000 in jsonb) and invalid UTF-8, and jsonb refuses a number outside
// its numeric range. A payload over 512 KiB goes to the blob store and
// bypasses jsonb's own check, so an event holding such text would be stored
// and then fail every projection that reads it; refusing it here with a 422
// naming the field keeps the account working. Refusing rather than replacing
// keeps what is stored byte-for-byte what the client sent.

// Field size limits, in bytes of UTF-8. Trace content (step text, tool
// inputs, metadata) is bounded by the request body limit, not here.
const (
	// MaxCommentBytes bounds an annotation's comment.
	MaxCommentBytes = 64 << 10
	// MaxTitleBytes bounds a trace title (imported or from a model).
	MaxTitleBytes = 4 << 10
	// MaxNameBytes bounds a name: a source alias, a reward model, a model
	// string, a member.
	MaxNameBytes = 512
	// MaxIDBytes bounds an identifier: a path id, an external trace id, a
	// source id, a tool call id.
	MaxIDBytes = 1 << 10
	// MaxQueryParamBytes bounds one URL query parameter value.
	MaxQueryParamBytes = 4 << 10
)

// CheckText refuses s when it is not valid UTF-8, holds U+0000, or is
// longer than limit bytes (limit 0: no size limit). field names the field
// in the error (a JSON path, a path or query parameter name).
func CheckText(field, s string, limit int) error {
	if limit > 0 && len(s) > limit {
		return invalidText(field, "is %d bytes, over the limit of %d bytes", len(s), limit)
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return invalidText(field, "contains a NUL character (U+0000) at byte %d; text may not contain U+0000", i)
	}
	if !utf8.ValidString(s) {
		return invalidText(field, "is not valid UTF-8 (first bad byte at %d)", firstInvalidUTF8(s))
	}
	return nil
}

// invalidText is the invalid_text refusal of field.
func invalidText(field, format string, args ...any) *ValidationError {
	return &ValidationError{Code: "invalid_text", Field: field, Message: fmt.Sprintf(format, args...)}
}

func firstInvalidUTF8(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(s)
}

// CheckRawText checks a raw payload (an import's JSON or JSONL) before a
// decoder reads it: encoding/json would silently replace invalid UTF-8 with
// U+FFFD, and a raw NUL byte is never text. The error names the line.
// Escaped NULs (\u0000) are found by ValidateTrace, with their field.
func CheckRawText(field string, b []byte) error {
	if utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 {
		return nil
	}
	bad := bytes.IndexByte(b, 0)
	what := "a NUL byte (U+0000); text may not contain U+0000"
	if i := firstInvalidUTF8(string(b)); i < len(b) && (bad < 0 || i < bad) {
		bad, what = i, "bytes that are not valid UTF-8"
	}
	line := 1 + bytes.Count(b[:bad], []byte("\n"))
	return &ValidationError{Code: "invalid_text", Field: field, Line: line, Message: "contains " + what}
}

// CheckNumber refuses a JSON number jsonb cannot store (beyond float64's
// range, which is also what every reader of the number decodes it into).
func CheckNumber(field string, n json.Number) error {
	f, err := strconv.ParseFloat(string(n), 64)
	mantissa, _, _ := strings.Cut(strings.ToLower(string(n)), "e")
	if err != nil || len(n) > maxNumberLen || (f == 0 && strings.ContainsAny(mantissa, "123456789")) {
		return invalidText(field, "the number %.40s is out of range (it must fit a 64-bit float, in at most %d characters)", string(n), maxNumberLen)
	}
	return nil
}

// CheckValue checks every string (map keys included) and number in a
// decoded JSON value (maps, slices, strings, json.Number, json.RawMessage,
// as decoders produce them), naming the path of the first bad one.
func CheckValue(field string, v any) error {
	switch x := v.(type) {
	case nil, bool, float64, float32, int, int64, int32, uint, uint64, uint32:
		return nil
	case string:
		return CheckText(field, x, 0)
	case json.Number:
		return CheckNumber(field, x)
	case json.RawMessage:
		return CheckJSON(field, x)
	case map[string]any:
		// Sorted, so the same field is named whatever the map order.
		for _, k := range slices.Sorted(maps.Keys(x)) {
			f := joinField(field, k)
			if err := CheckText(f, k, 0); err != nil {
				return err
			}
			if err := CheckValue(f, x[k]); err != nil {
				return err
			}
		}
		return nil
	case []any:
		for i, e := range x {
			if err := CheckValue(fmt.Sprintf("%s[%d]", field, i), e); err != nil {
				return err
			}
		}
		return nil
	case []string:
		for i, e := range x {
			if err := CheckText(fmt.Sprintf("%s[%d]", field, i), e, 0); err != nil {
				return err
			}
		}
		return nil
	case map[string]string:
		for k, e := range x {
			if err := CheckText(joinField(field, k), k, 0); err != nil {
				return err
			}
			if err := CheckText(joinField(field, k), e, 0); err != nil {
				return err
			}
		}
		return nil
	default:
		// Anything else came from our own code, not from a decoder: check
		// what it encodes to.
		b, err := json.Marshal(x)
		if err != nil {
			return &ValidationError{Code: "invalid_text", Field: field, Message: "cannot be encoded as JSON: " + err.Error()}
		}
		return CheckJSON(field, b)
	}
}

// CheckJSON checks raw JSON text (a request body, a stored span) the way
// CheckValue checks a decoded value: the bytes must be UTF-8, no string
// (key or value) may hold U+0000, escaped or not, or an unpaired UTF-16
// surrogate escape such as \ud800 (jsonb refuses it; encoding/json would
// hide it as U+FFFD, so raw JSON kept as sent must be checked as sent),
// and every number must be one jsonb and a float64 can hold. Text without
// any of these needs no walk, so the common case costs a few scans.
// Malformed JSON is left to the decoder that reads it.
func CheckJSON(field string, raw []byte) error {
	if utf8.Valid(raw) && bytes.IndexByte(raw, 0) < 0 && !bytes.Contains(raw, []byte(`\u0000`)) &&
		!mayHoldOddNumber(raw) && loneSurrogate(raw) < 0 {
		return nil
	}
	// Name the field when the structure can be walked.
	if err := walkJSON(field, raw, true); err != nil {
		return err
	}
	if !utf8.Valid(raw) {
		return invalidText(field, "is not valid UTF-8 (first bad byte at %d)", firstInvalidUTF8(string(raw)))
	}
	if i := loneSurrogate(raw); i >= 0 {
		return invalidText(field, "has an unpaired UTF-16 surrogate escape at byte %d", i)
	}
	return nil
}

// loneSurrogate returns the offset of the first \uXXXX escape in raw that
// is half of a UTF-16 surrogate pair without its other half, or -1.
func loneSurrogate(raw []byte) int {
	hex4 := func(i int) (rune, bool) { // the escape at raw[i] = '\\'
		if i+6 > len(raw) || raw[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 32)
		return rune(v), err == nil
	}
	for i := bytes.IndexByte(raw, '\\'); i >= 0 && i < len(raw); {
		r, ok := hex4(i)
		switch {
		case ok && r >= 0xD800 && r < 0xDC00:
			if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo < 0xE000 && i+6 < len(raw) && raw[i+6] == '\\' {
				i += 12
			} else {
				return i
			}
		case ok && r >= 0xDC00 && r < 0xE000:
			return i
		default:
			i += 2 // any escape is at least two bytes; \\ is skipped whole
		}
		if i >= len(raw) {
			break
		}
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			break
		}
		i += j
	}
	return -1
}

// maxNumberLen bounds a JSON number's spelling: jsonb's numeric holds at
// most 16383 digits after the point, and no real measurement needs more
// than a few dozen.
const maxNumberLen = 1000

// mayHoldOddNumber reports whether raw may hold a number CheckNumber
// refuses: one with an exponent of three digits or more, or a run of
// hundreds of digits.
func mayHoldOddNumber(raw []byte) bool {
	if hasBigExponent(raw) {
		return true
	}
	run := 0
	for _, c := range raw {
		if c >= '0' && c <= '9' {
			if run++; run >= 300 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// hasBigExponent reports whether raw may hold a number with an exponent of
// three digits or more (the only way a JSON number leaves float64's range
// without being absurdly long).
func hasBigExponent(raw []byte) bool {
	for i := 0; i+3 < len(raw); i++ {
		if raw[i] != 'e' && raw[i] != 'E' {
			continue
		}
		j := i + 1
		if raw[j] == '+' || raw[j] == '-' {
			j++
		}
		d := 0
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
			d++
		}
		if d >= 3 && i > 0 && raw[i-1] >= '0' && raw[i-1] <= '9' {
			return true
		}
	}
	return false
}

// jsonFrame is one open object or array while walkJSON descends.
type jsonFrame struct {
	obj    bool
	index  int    // the current element of an array
	key    string // the current key of an object
	expKey bool   // an object's next string token is a key
}

// done moves the frame past one value.
func (f *jsonFrame) done() {
	if f.obj {
		f.expKey = true
	} else {
		f.index++
	}
}

// walkJSON walks raw token by token keeping the path, and checks every
// string and number. With rawStrings, each string is also checked as its
// raw bytes (the decoder would have replaced invalid UTF-8 and unpaired
// surrogate escapes with U+FFFD).
func walkJSON(field string, raw []byte, rawStrings bool) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []*jsonFrame
	path := func() string {
		f := field
		for _, fr := range stack {
			if fr.obj {
				f = joinField(f, fr.key)
			} else {
				f = fmt.Sprintf("%s[%d]", f, fr.index)
			}
		}
		return f
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or malformed: the decoder that reads it says so
		}
		var top *jsonFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				stack = append(stack, &jsonFrame{obj: t == '{', expKey: t == '{'})
				continue
			}
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				stack[len(stack)-1].done()
			}
			continue
		case string:
			isKey := top != nil && top.obj && top.expKey
			if isKey {
				top.key, top.expKey = t, false
			}
			if err := CheckText(path(), t, 0); err != nil {
				return err
			}
			if rawStrings {
				s := lastRawString(raw, dec.InputOffset())
				if !utf8.ValidString(s) {
					return CheckText(path(), s, 0)
				}
				if i := loneSurrogate([]byte(s)); i >= 0 {
					return invalidText(path(), "has an unpaired UTF-16 surrogate escape (%.6s), which the stores refuse", s[i:])
				}
			}
			if isKey {
				continue
			}
		case json.Number:
			if err := CheckNumber(path(), t); err != nil {
				return err
			}
		}
		if top != nil {
			top.done()
		}
	}
}

// lastRawString returns the raw bytes between the quotes of the string
// token that ends just before offset end.
func lastRawString(raw []byte, end int64) string {
	e := int(end) - 1 // the closing quote
	if e <= 0 || e >= len(raw) || raw[e] != '"' {
		return ""
	}
	for s := e - 1; s >= 0; s-- {
		if raw[s] != '"' {
			continue
		}
		bs := 0
		for k := s - 1; k >= 0 && raw[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			return string(raw[s+1 : e])
		}
	}
	return ""
}

func joinField(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}
