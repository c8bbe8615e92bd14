package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/criticml/critic/domain"
)

// eachLine calls fn for every non-blank line of a JSONL payload with its
// 1-based line number. Lines split on LF only (a trailing CR is dropped), so
// Unicode line separators inside JSON strings stay where they are.
//
// A payload that is one JSON object written over several lines (a record
// pretty-printed by an editor or `jq .`) is that one record, at the line
// where it starts: every format that takes objects takes it as written.
func eachLine(data []byte, fn func(line int, raw []byte) error) error {
	if obj, at, ok := oneObject(data); ok {
		return domain.AtLine(fn(at, obj), at)
	}
	multi := bytes.Count(bytes.TrimSpace(data), []byte{'\n'}) > 0
	line := 0
	for raw := range bytes.SplitSeq(data, []byte{'\n'}) {
		line++
		raw = bytes.TrimSuffix(raw, []byte{'\r'})
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		if err := fn(line, raw); err != nil {
			if multi && !json.Valid(raw) {
				err = perLineHint(err)
			}
			return domain.AtLine(err, line)
		}
	}
	return nil
}

// eachValue calls fn with each record of a payload that is one JSON
// document (whole: a value, or an array whose elements are the records,
// prefix "[i].") or JSONL (a record per line, at its line, prefix "").
func eachValue(data []byte, whole bool, fn func(v any, line int, prefix string) error) error {
	if !whole {
		return eachLine(data, func(line int, raw []byte) error {
			var v any
			if err := decodeJSON(raw, &v); err != nil {
				return err
			}
			return fn(v, line, "")
		})
	}
	var v any
	if err := decodeJSON(data, &v); err != nil {
		return err
	}
	arr, isArray := v.([]any)
	if !isArray {
		return fn(v, 0, "")
	}
	for i, e := range arr {
		if err := fn(e, 0, fmt.Sprintf("[%d].", i)); err != nil {
			return err
		}
	}
	return nil
}

// decodeJSON decodes one JSON value strictly: numbers stay json.Number so ids
// and large integers survive a round trip, and trailing data is an error.
func decodeJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return &domain.ValidationError{Code: "invalid_json", Message: "malformed JSON: " + jsonErrorText(err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &domain.ValidationError{Code: "invalid_json", Message: "malformed JSON: unexpected data after the value"}
	}
	return nil
}

// jsonErrorText makes encoding/json's messages say where the problem is.
func jsonErrorText(err error) string {
	if syn, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("%s (at byte %d)", syn.Error(), syn.Offset)
	}
	if typ, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if typ.Field != "" {
			return fmt.Sprintf("field %s: expected %s, got JSON %s", typ.Field, typ.Type, typ.Value)
		}
		return fmt.Sprintf("expected %s, got JSON %s", typ.Type, typ.Value)
	}
	return err.Error()
}

// firstJSONByte returns the first non-space byte of data, or 0.
func firstJSONByte(data []byte) byte {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 {
		return t[0]
	}
	return 0
}

// oneObjectHint is what a JSONL parse error adds when the payload holds
// several lines and the failing one is not JSON by itself: the usual cause
// is a pretty-printed object (or several) where JSONL was expected.
const oneObjectHint = "one JSON object per line expected"

// perLineHint adds oneObjectHint to a malformed-JSON error.
func perLineHint(err error) error {
	var v *domain.ValidationError
	if !errors.As(err, &v) || v.Code != "invalid_json" {
		return err
	}
	c := *v
	c.Message += " (" + oneObjectHint + ")"
	return &c
}

// oneObject reports whether data is a single JSON object spread over
// several lines rather than JSONL, and returns it compacted onto one line
// with the 1-based line it starts on. JSONL's first line is a value by
// itself, so the check costs one line's scan for every JSONL payload.
func oneObject(data []byte) (obj []byte, line int, ok bool) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' || bytes.IndexByte(trimmed, '\n') < 0 {
		return nil, 0, false
	}
	if json.Valid(firstLine(data)) || !json.Valid(trimmed) {
		return nil, 0, false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, trimmed) != nil {
		return nil, 0, false
	}
	lead := data[:bytes.IndexByte(data, '{')]
	return buf.Bytes(), bytes.Count(lead, []byte{'\n'}) + 1, true
}

// firstRecord is the first record of a JSONL payload: its first line, or
// the whole payload compacted when it is one pretty-printed object.
func firstRecord(data []byte) []byte {
	if obj, _, ok := oneObject(data); ok {
		return obj
	}
	return firstLine(data)
}

// firstLine returns the first non-blank line of data.
func firstLine(data []byte) []byte {
	for raw := range bytes.SplitSeq(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(raw)) > 0 {
			return raw
		}
	}
	return nil
}
