package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/criticml/critic/domain"
)

// All lists every adapter in the order `auto` tries them: the most specific
// shapes first, so a payload that could match several goes to the format that
// claims it most narrowly.
func All() []Adapter {
	return []Adapter{
		Stash{},
		ClaudeCode{},
		Codex{},
		OpenAIChat{},
		AnthropicMessages{},
		OTel{},
		Langfuse{},
		LangSmith{},
	}
}

// Lookup returns the adapter for a format name; "auto" detects it from the
// payload. An unknown name is a ValidationError listing the known ones.
func Lookup(name string) (Adapter, error) {
	if name == "auto" {
		return Auto{}, nil
	}
	var names []string
	for _, a := range All() {
		if a.Name() == name {
			return a, nil
		}
		names = append(names, a.Name())
	}
	return nil, &domain.ValidationError{Code: "unknown_format", Field: "format",
		Message: fmt.Sprintf("unknown format %q (supported: %s, auto)", name, strings.Join(names, ", "))}
}

// Auto detects the format from the payload's shape and parses with the first
// adapter that claims it.
type Auto struct{}

func (Auto) Name() string        { return "auto" }
func (Auto) Description() string { return "Detect the format from the payload's shape." }
func (Auto) Detect([]byte) bool  { return true }

// Parse tries each adapter's Detect in registry order; when none matches it
// fails with a 422 naming every format it tried.
func (Auto) Parse(data []byte) ([]domain.Trace, error) {
	a, err := DetectFormat(data)
	if err != nil {
		return nil, err
	}
	return a.Parse(data)
}

// DetectFormat returns the adapter whose shape matches data.
func DetectFormat(data []byte) (Adapter, error) {
	tried := []string{}
	for _, a := range All() {
		if a.Detect(data) {
			return a, nil
		}
		tried = append(tried, a.Name())
	}
	if line, why := parseProblem(data); why != "" {
		// No format matched because the file is not JSON where it breaks:
		// say where and why, which is what the user has to fix.
		return nil, &domain.ValidationError{Code: "invalid_json", Field: "data", Line: line,
			Message: "could not detect the format: malformed JSON: " + why + "; tried " + strings.Join(tried, ", ")}
	}
	return nil, &domain.ValidationError{Code: "unknown_format", Field: "data",
		Message: "could not detect the format; tried " + strings.Join(tried, ", ")}
}

// parseProblem finds why data is not JSON or JSONL: the 1-based line and
// the parse error ("" when every record parses, or when the data does not
// look like JSON at all). A payload whose first line is a value by itself is
// read as JSONL (the first line that is not JSON); any other as one JSON
// document (the line where it breaks).
func parseProblem(data []byte) (int, string) {
	switch firstJSONByte(data) {
	case '{', '[':
	default:
		return 0, ""
	}
	trimmed := bytes.TrimSpace(data)
	if json.Valid(trimmed) {
		return 0, ""
	}
	if json.Valid(firstLine(data)) {
		line, bad := 0, ""
		_ = eachLine(data, func(n int, raw []byte) error {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				line, bad = n, jsonErrorText(err)+" ("+oneObjectHint+")"
				return errStopScan
			}
			return nil
		})
		return line, bad
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&v)
	if err == nil {
		// One value, then more: several pretty-printed objects, say.
		off := dec.InputOffset()
		return bytes.Count(data[:off], []byte{'\n'}) + 1 + leadingNewlines(data[off:]),
			"unexpected data after the first value (" + oneObjectHint + ")"
	}
	if syn, ok := errors.AsType[*json.SyntaxError](err); ok {
		return bytes.Count(data[:syn.Offset], []byte{'\n'}) + 1, syn.Error()
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return bytes.Count(trimmed, []byte{'\n'}) + 1, "unexpected end of JSON input"
	}
	return 1, err.Error()
}

// leadingNewlines counts the line breaks before data's first non-space byte.
func leadingNewlines(data []byte) int {
	space := len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
	return bytes.Count(data[:space], []byte{'\n'})
}
