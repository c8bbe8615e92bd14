package formats

import (
	"fmt"
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
	for _, a := range All() {
		if a.Name() == name {
			return a, nil
		}
	}
	names := []string{}
	for _, a := range All() {
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
	return nil, &domain.ValidationError{Code: "unknown_format", Field: "data",
		Message: "could not detect the format; tried " + strings.Join(tried, ", ")}
}
