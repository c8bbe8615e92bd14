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
func eachLine(data []byte, fn func(line int, raw []byte) error) error {
	line := 0
	for len(data) > 0 {
		line++
		var raw []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			raw, data = data[:i], data[i+1:]
		} else {
			raw, data = data, nil
		}
		raw = bytes.TrimSuffix(raw, []byte{'\r'})
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		if err := fn(line, raw); err != nil {
			return domain.AtLine(err, line)
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
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("%s (at byte %d)", syn.Error(), syn.Offset)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		if typ.Field != "" {
			return fmt.Sprintf("field %s: expected %s, got JSON %s", typ.Field, typ.Type, typ.Value)
		}
		return fmt.Sprintf("expected %s, got JSON %s", typ.Type, typ.Value)
	}
	return err.Error()
}

// firstJSONByte returns the first non-space byte of data, or 0.
func firstJSONByte(data []byte) byte {
	for _, b := range data {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b
	}
	return 0
}

// firstLine returns the first non-blank line of data.
func firstLine(data []byte) []byte {
	for len(data) > 0 {
		var raw []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			raw, data = data[:i], data[i+1:]
		} else {
			raw, data = data, nil
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			return raw
		}
	}
	return nil
}
