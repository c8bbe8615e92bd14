package domain_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

func textErr(t *testing.T, err error) *domain.ValidationError {
	t.Helper()
	var v *domain.ValidationError
	require.True(t, errors.As(err, &v), "want a ValidationError, got %v", err)
	return v
}

func TestCheckTextRefusesNULInvalidUTF8AndOversize(t *testing.T) {
	t.Parallel()
	require.NoError(t, domain.CheckText("comment", "héllo ✓ 🎉", 64))
	require.NoError(t, domain.CheckText("comment", strings.Repeat("x", 64), 64))

	for _, c := range []struct{ in, want string }{
		{"a\x00b", "U+0000"},
		{"bad \xff byte", "not valid UTF-8"},
		{"\xed\xa0\x80", "not valid UTF-8"}, // a UTF-16 surrogate half, which jsonb refuses too
		{strings.Repeat("x", 65), "over the limit of 64 bytes"},
	} {
		v := textErr(t, domain.CheckText("comment", c.in, 64))
		require.Equal(t, "comment", v.Field, c.in)
		require.Contains(t, v.Error(), c.want)
	}
}

func TestCheckJSONNamesTheField(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, field, want string }{
		{`{"a":{"b":["x","y\u0000"]}}`, "body.a.b[1]", "U+0000"},
		{`{"a":1,"k\u0000":2}`, "body.k\x00", "U+0000"},
		{"{\"a\":[1,{\"c\":\"\xff\"}]}", "body.a[1].c", "not valid UTF-8"},
		{`{"n":1e400}`, "body.n", "out of range"},
		{`{"n":[1e-400]}`, "body.n[0]", "out of range"}, // underflows a float64 (1e-16384 and below jsonb refuses too)
		{`{"n":1` + strings.Repeat("0", 1200) + `}`, "body.n", "out of range"},
		{`{"a":"x\ud800"}`, "body.a", "unpaired UTF-16 surrogate"},
		{`{"a":"\udc00\ud83d"}`, "body.a", "unpaired UTF-16 surrogate"},
		{`{"\ud83dk":1}`, "body.\ufffdk", "unpaired UTF-16 surrogate"},
	} {
		v := textErr(t, domain.CheckJSON("body", []byte(c.in)))
		require.Equal(t, c.field, v.Field, c.in)
		require.Contains(t, v.Error(), c.want)
	}
	// An escaped backslash before u0000 is text, not a NUL.
	require.NoError(t, domain.CheckJSON("body", []byte(`{"a":"\\u0000","n":1e10,"m":"1e400","z":0e-999,"s":"\ud83d\ude00 \\ud800 \u00e9"}`)))
}

func TestCheckRawTextNamesTheLine(t *testing.T) {
	t.Parallel()
	require.NoError(t, domain.CheckRawText("data", []byte("{\"a\":\"é\"}\n{}")))
	v := textErr(t, domain.CheckRawText("data", []byte("{}\n{}\n{\"a\":\"\xff\"}")))
	require.Equal(t, 3, v.Line)
	require.Equal(t, "data", v.Field)
	require.Contains(t, v.Error(), "valid UTF-8")
	v = textErr(t, domain.CheckRawText("data", []byte("{}\n\x00")))
	require.Equal(t, 2, v.Line)
	require.Contains(t, v.Error(), "U+0000")
}

func TestValidateTraceRefusesUnsafeText(t *testing.T) {
	t.Parallel()
	ok := domain.Trace{Steps: []domain.Step{{Role: domain.RoleUser, Content: "hi"}}}
	require.NoError(t, domain.ValidateTrace(ok, 3))
	for _, c := range []struct {
		name  string
		edit  func(*domain.Trace)
		field string
	}{
		{"content", func(t *domain.Trace) { t.Steps[0].Content = "a\x00" }, "steps[0].content"},
		{"title", func(t *domain.Trace) { t.Title = "\xff" }, "title"},
		{"long title", func(t *domain.Trace) { t.Title = strings.Repeat("t", domain.MaxTitleBytes+1) }, "title"},
		{"id", func(t *domain.Trace) { t.ExternalID = "x\x00" }, "id"},
		{"tool input", func(t *domain.Trace) {
			t.Steps = append(t.Steps, domain.Step{Role: domain.RoleAssistant, ToolName: "read", ToolInput: map[string]any{"path": []any{"ok", "\x00"}}})
		}, "steps[1].tool_input.path[1]"},
		{"metadata number", func(t *domain.Trace) { t.Metadata = map[string]any{"n": json.Number("1e999")} }, "metadata.n"},
		{"span output", func(t *domain.Trace) {
			t.Spans = []domain.Span{{ID: "s", Output: json.RawMessage(`{"text":"\u0000"}`)}}
		}, "spans[0].output.text"},
	} {
		tr := ok
		tr.Steps = append([]domain.Step(nil), ok.Steps...)
		c.edit(&tr)
		v := textErr(t, domain.ValidateTrace(tr, 3))
		require.Equal(t, c.field, v.Field, c.name)
		require.Equal(t, 3, v.Line, c.name)
	}
}

// FuzzTextIsStoreSafe: whatever text passes the edge's validation encodes
// to JSON that PostgreSQL's jsonb and text accept (valid UTF-8, no NUL,
// escaped or not) and round-trips unchanged, so an event holding it can
// always be projected.
func FuzzTextIsStoreSafe(f *testing.F) {
	for _, s := range []string{"", "plain", "a\x00b", "\xff", "\xed\xa0\x80", `\u0000`, "é🎉", `{"a":"\u0000"}`, `{"a":1e400}`, `["\\u0000"]`, `{"a":"\ud800"}`, `[1e-99999]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		safe := func(b []byte) {
			require.True(t, utf8.Valid(b))
			require.Equal(t, -1, bytes.IndexByte(b, 0))
			// \u0000 as an escape (not an escaped backslash followed by u0000).
			var v any
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			require.NoError(t, d.Decode(&v))
			require.NoError(t, domain.CheckValue("v", v))
		}
		if domain.CheckText("f", s, 0) == nil {
			require.True(t, utf8.ValidString(s))
			require.NotContains(t, s, "\x00")
			b, err := json.Marshal(map[string]any{s: s})
			require.NoError(t, err)
			safe(b)
			var back map[string]string
			require.NoError(t, json.Unmarshal(b, &back))
			require.Equal(t, s, back[s])
		}
		tr := domain.Trace{Title: s, Steps: []domain.Step{{Role: domain.RoleUser, Content: s, Metadata: map[string]any{s: []any{s}}}}}
		if domain.ValidateTrace(tr, 0) == nil {
			b, err := json.Marshal(tr)
			require.NoError(t, err)
			safe(b)
		}
		if json.Valid([]byte(s)) && domain.CheckJSON("raw", []byte(s)) == nil {
			var v any
			d := json.NewDecoder(strings.NewReader(s))
			d.UseNumber()
			require.NoError(t, d.Decode(&v))
			b, err := json.Marshal(v)
			require.NoError(t, err)
			safe(b)
		}
	})
}
