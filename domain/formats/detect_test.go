package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

// pretty re-indents a one-line JSON record the way an editor or `jq .`
// writes it.
func pretty(t *testing.T, line string) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, json.Indent(&buf, []byte(line), "", "  "))
	return append([]byte("\n"), buf.Bytes()...)
}

// TestOnePrettyPrintedObjectIsOneRecord: every format that takes objects
// per line takes one object written over many lines, detected and parsed
// exactly as its one-line form.
func TestOnePrettyPrintedObjectIsOneRecord(t *testing.T) {
	records := map[string]string{
		"stash":              `{"id":"p1","steps":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello","tool_name":"x","tool_input":{"a":1},"tool_call_id":"c"},{"role":"tool","content":"ok","tool_call_id":"c"}]}`,
		"openai_chat":        `{"id":"p2","messages":[{"role":"user","content":"2+2?"},{"role":"assistant","content":"4"}]}`,
		"anthropic_messages": `{"id":"p3","system":"be brief","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"hello"}]}]}`,
		"langsmith":          `{"id":"8f3a2c1e-0000-4000-8000-00000000000a","trace_id":"8f3a2c1e-0000-4000-8000-00000000000a","run_type":"llm","name":"chat","inputs":{"messages":[{"role":"user","content":"hi"}]},"outputs":{"generations":[[{"text":"hello","message":{"type":"ai","content":"hello"}}]]}}`,
	}
	for format, line := range records {
		t.Run(format, func(t *testing.T) {
			want, err := mustLookup(t, format).Parse([]byte(line))
			require.NoError(t, err, "the one-line form parses")
			data := pretty(t, line)
			a, err := DetectFormat(data)
			require.NoError(t, err)
			require.Equal(t, format, a.Name())
			got, err := a.Parse(data)
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

func mustLookup(t *testing.T, name string) Adapter {
	a, err := Lookup(name)
	require.NoError(t, err)
	return a
}

// TestAnthropicCapturedCall: a Messages API call as a proxy or SDK hook
// captures it is the request's conversation and the response as the last
// assistant turn, its id the trace's id; pretty-printed too.
func TestAnthropicCapturedCall(t *testing.T) {
	call := `{"request":{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"You are a support agent.",` +
		`"tools":[{"name":"lookup_order","input_schema":{"type":"object"}}],` +
		`"messages":[{"role":"user","content":"Refund order 1182"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"lookup_order","input":{"order_id":"1182"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"delivered"}]}]},` +
		`"response":{"id":"msg_01XYZ","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
		`"content":[{"type":"text","text":"It was delivered; no refund is due."}],"stop_reason":"end_turn","usage":{"input_tokens":50,"output_tokens":9}}}`
	for _, data := range [][]byte{[]byte(call), pretty(t, call)} {
		a, err := DetectFormat(data)
		require.NoError(t, err)
		require.Equal(t, "anthropic_messages", a.Name())
		traces, err := a.Parse(data)
		require.NoError(t, err)
		require.Len(t, traces, 1)
		tr := traces[0]
		require.Equal(t, "msg_01XYZ", tr.ExternalID)
		require.Equal(t, "claude-sonnet-4-5", tr.Metadata["model"])
		var got []string
		for _, s := range tr.Steps {
			got = append(got, string(s.Role)+":"+s.ToolName+":"+s.Content)
		}
		require.Equal(t, []string{
			"system::You are a support agent.",
			"user::Refund order 1182",
			"assistant:lookup_order:",
			"tool:lookup_order:delivered",
			"assistant::It was delivered; no refund is due.",
		}, got)
	}

	_, err := AnthropicMessages{}.Parse([]byte(`{"request":{"messages":[{"role":"user","content":"hi"}]}}`))
	requireLineField(t, err, 1, "response", `missing "response"`)
	_, err = AnthropicMessages{}.Parse([]byte(`{"request":{"messages":[{"role":"user","content":"hi"}]},"response":{"role":"assistant","content":"x"}}`))
	requireLineField(t, err, 1, "response.content", `"content" array`)
}

func requireLineField(t *testing.T, err error, line int, field, contains string) {
	t.Helper()
	var v *domain.ValidationError
	require.True(t, errors.As(err, &v), "%v", err)
	require.Equal(t, line, v.Line, v.Error())
	require.Equal(t, field, v.Field, v.Error())
	require.Contains(t, v.Message, contains)
}

// TestMultiLineInputThatIsNotJSONL: several pretty-printed objects, or one
// that does not parse, say which line breaks, why, and what was expected.
func TestMultiLineInputThatIsNotJSONL(t *testing.T) {
	stash := `{"steps":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`
	two := append(pretty(t, stash), pretty(t, stash)...)

	_, err := Stash{}.Parse(two)
	var v *domain.ValidationError
	require.ErrorAs(t, err, &v)
	require.Equal(t, 2, v.Line, v.Error())
	require.Contains(t, v.Message, "one JSON object per line expected")

	_, err = DetectFormat(two)
	require.ErrorAs(t, err, &v)
	require.Equal(t, "invalid_json", v.Code)
	require.Equal(t, 14, v.Line, "the second object starts on line 14: %v", v)
	require.Contains(t, v.Message, "one JSON object per line expected")
	require.Contains(t, v.Message, "tried stash")

	broken := bytes.Replace(pretty(t, stash), []byte(`"hello"`), []byte(`"hello",`), 1)
	_, err = DetectFormat(broken)
	require.ErrorAs(t, err, &v)
	require.Equal(t, 11, v.Line, "where the parser meets the stray comma's consequence: %v", v)
	require.Contains(t, v.Message, "invalid character '}'")

	jsonl := stash + "\n" + stash + "\n" + `{"steps": [` + "\n"
	_, err = DetectFormat([]byte(strings.Replace(jsonl, `{"steps"`, `{steps`, 1)))
	require.ErrorAs(t, err, &v)
	require.Equal(t, 1, v.Line, v.Error())

	_, err = DetectFormat([]byte("just some text"))
	require.ErrorAs(t, err, &v)
	require.Equal(t, "unknown_format", v.Code, "text that is not JSON at all names the formats tried")
	require.Contains(t, v.Message, "tried stash")
}
