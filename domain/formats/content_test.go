package formats

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/criticml/critic/domain"
)

// Helpers shared by the openai_chat, anthropic_messages, claude_code and codex
// tests. The module's go.sum lacks testify's dependencies, so these use the
// standard library.

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read testdata: %v", err)
	}
	return b
}

func mustParse(t testing.TB, a Adapter, data []byte) []domain.Trace {
	t.Helper()
	traces, err := a.Parse(data)
	if err != nil {
		t.Fatalf("%s.Parse: %v", a.Name(), err)
	}
	for i, tr := range traces {
		if err := domain.ValidateTrace(tr, 0); err != nil {
			t.Fatalf("trace %d does not validate: %v", i, err)
		}
	}
	return traces
}

// asJSON renders v indented, so step comparisons show a readable diff and
// json.Number and int compare equal.
func asJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}

func requireSteps(t testing.TB, got, want []domain.Step) {
	t.Helper()
	g, w := asJSON(t, got), asJSON(t, want)
	if g != w {
		t.Fatalf("steps differ\n--- got\n%s\n--- want\n%s", g, w)
	}
}

func requireJSONEqual(t testing.TB, got, want any) {
	t.Helper()
	g, w := asJSON(t, got), asJSON(t, want)
	if g != w {
		t.Fatalf("value differs\n--- got\n%s\n--- want\n%s", g, w)
	}
}

// requireInvalid checks err is a ValidationError at line whose field starts
// with fieldPrefix.
func requireInvalid(t testing.TB, err error, line int, fieldPrefix string) *domain.ValidationError {
	t.Helper()
	var v *domain.ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("want a *domain.ValidationError, got %T: %v", err, err)
	}
	if v.Line != line {
		t.Fatalf("error line = %d, want %d (%v)", v.Line, line, v)
	}
	if !strings.HasPrefix(v.Field, fieldPrefix) || (fieldPrefix == "" && v.Field != "") {
		t.Fatalf("error field = %q, want prefix %q (%v)", v.Field, fieldPrefix, v)
	}
	return v
}

// parseInvariants is what every fuzz target checks: no panic, errors are
// ValidationErrors and nothing else is returned with them, every trace
// validates, and Detect does not panic.
func parseInvariants(t *testing.T, a Adapter, data []byte) {
	_ = a.Detect(data)
	traces, err := a.Parse(data)
	if err != nil {
		if _, ok := err.(*domain.ValidationError); !ok {
			t.Fatalf("error is %T, not *domain.ValidationError: %v", err, err)
		}
		if traces != nil {
			t.Fatalf("traces returned with an error")
		}
		return
	}
	if len(traces) == 0 {
		t.Fatalf("no traces and no error")
	}
	for _, tr := range traces {
		if err := domain.ValidateTrace(tr, 0); err != nil {
			t.Fatalf("trace does not validate: %v", err)
		}
		if _, err := json.Marshal(tr); err != nil {
			t.Fatalf("trace does not marshal: %v", err)
		}
	}
}

func TestNormalizeTimestamp(t *testing.T) {
	cases := []struct {
		in, want string
		err      bool
	}{
		{in: ``, want: ""},
		{in: `null`, want: ""},
		{in: `"2026-01-21T06:19:38.056Z"`, want: "2026-01-21T06:19:38.056Z"},
		{in: `"2025-03-01T10:00:00+01:00"`, want: "2025-03-01T10:00:00+01:00"},
		{in: `"2025-03-01T10:00:00"`, want: "2025-03-01T10:00:00Z"},
		{in: `"2025-03-01 10:00:00.5"`, want: "2025-03-01T10:00:00.5Z"},
		{in: `1740819601`, want: "2025-03-01T09:00:01Z"},
		{in: `1740819601.25`, want: "2025-03-01T09:00:01.25Z"},
		{in: `1740819601250`, want: "2025-03-01T09:00:01.25Z"},
		{in: `"1740819601"`, want: "2025-03-01T09:00:01Z"},
		{in: `"yesterday"`, err: true},
		{in: `true`, err: true},
		{in: `-5`, err: true},
		{in: `1e300`, err: true},
	}
	for _, c := range cases {
		got, err := normalizeTimestamp(json.RawMessage(c.in))
		if c.err {
			if err == nil {
				t.Errorf("normalizeTimestamp(%s) = %q, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("normalizeTimestamp(%s) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestToolArguments(t *testing.T) {
	cases := []struct {
		in   string
		want map[string]any
	}{
		{`"{\"city\":\"Paris\",\"days\":3}"`, map[string]any{"city": "Paris", "days": json.Number("3")}},
		{`{"city":"Paris"}`, map[string]any{"city": "Paris"}},
		{`""`, nil},
		{`null`, nil},
		{`"not json"`, map[string]any{"_raw": "not json"}},
		{`"[1,2]"`, map[string]any{"_raw": "[1,2]"}},
		{`"{\"truncated\":"`, map[string]any{"_raw": `{"truncated":`}},
		{`[1]`, map[string]any{"_raw": "[1]"}},
	}
	for _, c := range cases {
		requireJSONEqual(t, toolArguments(json.RawMessage(c.in)), c.want)
	}
}

// TestDetectOwnTestdata: each format's testdata is detected as that format,
// and stash input is not claimed by any of these adapters.
func TestDetectOwnTestdata(t *testing.T) {
	cases := map[string]string{
		"openai_chat.jsonl":        "openai_chat",
		"openai_chat_array.json":   "openai_chat",
		"anthropic_messages.jsonl": "anthropic_messages",
		"claude_code.jsonl":        "claude_code",
		"codex.jsonl":              "codex",
		"codex_legacy.jsonl":       "codex",
		"codex_events_only.jsonl":  "codex",
	}
	for file, want := range cases {
		a, err := DetectFormat(readTestdata(t, file))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if a.Name() != want {
			t.Errorf("%s detected as %s, want %s", file, a.Name(), want)
		}
	}
	stash := []byte(`{"id":"s1","steps":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}` + "\n")
	for _, a := range []Adapter{OpenAIChat{}, AnthropicMessages{}, ClaudeCode{}, Codex{}} {
		if a.Detect(stash) {
			t.Errorf("%s claims stash input", a.Name())
		}
	}
	// And none of them claims another's testdata.
	for file, owner := range cases {
		data := readTestdata(t, file)
		for _, a := range []Adapter{OpenAIChat{}, AnthropicMessages{}, ClaudeCode{}, Codex{}, Stash{}} {
			if a.Name() != owner && a.Detect(data) {
				t.Errorf("%s also claims %s", a.Name(), file)
			}
		}
	}
}

// TestDetectLeavesOtherFormats: none of these adapters claims another
// format's testdata (or the shared Langfuse samples, when present).
func TestDetectLeavesOtherFormats(t *testing.T) {
	mine := []string{"openai_", "anthropic_", "claude_code", "codex"}
	files, _ := filepath.Glob(filepath.Join("testdata", "*"))
	shared := sharedFixtureGlob(t, "langfuse/*.json")
	for _, path := range append(files, shared...) {
		base := filepath.Base(path)
		own := false
		for _, p := range mine {
			own = own || strings.HasPrefix(base, p)
		}
		if own {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, a := range []Adapter{OpenAIChat{}, AnthropicMessages{}, ClaudeCode{}, Codex{}} {
			if a.Detect(data) {
				t.Errorf("%s claims %s", a.Name(), path)
			}
		}
	}
}
