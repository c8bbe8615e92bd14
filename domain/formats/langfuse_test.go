package formats

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLangfuseTestdata(t *testing.T) {
	traces, err := Langfuse{}.Parse(readFormatTestdata(t, "langfuse_public.json"))
	require.NoError(t, err)
	require.Len(t, traces, 2)

	tr := traces[0]
	require.Equal(t, "lf-trace-1", tr.ExternalID)
	require.Equal(t, "support-bot", tr.Title)
	require.Equal(t, map[string]any{"agent": "support-bot", "model": "gpt-4o", "user_id": "user-7", "session_id": "sess-3",
		"tags": []any{"prod"}}, tr.Metadata)
	require.Equal(t, []string{"system:You are a support agent.", "user:Where is order 1182?",
		`call lookup_order#call_a{"order_id":"1182"}`, `tool lookup_order#call_a:{"status":"shipped"}`,
		"assistant:It has shipped.", "user:Thanks!", "assistant:You're welcome."}, callSteps(tr.Steps))
	ms := func(s string) int64 { return mustISO(t, s) }
	require.Equal(t, []spanSummary{
		{ID: "root-1", Kind: "span", Start: ms("2025-01-02T10:00:00.000Z"), End: ms("2025-01-02T10:00:04.500Z"), Steps: []int{}},
		{ID: "gen-1", Parent: "root-1", Kind: "generation", Start: ms("2025-01-02T10:00:00.100Z"), End: ms("2025-01-02T10:00:01.000Z"), Steps: []int{0, 1, 2}},
		{ID: "tool-1", Parent: "root-1", Kind: "tool", Start: ms("2025-01-02T10:00:01.100Z"), End: ms("2025-01-02T10:00:01.200Z"), Steps: []int{}},
		{ID: "gen-2", Parent: "root-1", Kind: "generation", Start: ms("2025-01-02T10:00:01.300Z"), End: ms("2025-01-02T10:00:02.000Z"), Steps: []int{3, 4}},
		{ID: "evt-1", Parent: "root-1", Kind: "event", Start: ms("2025-01-02T10:00:03.000Z"), End: ms("2025-01-02T10:00:03.000Z"), Steps: []int{}},
		{ID: "gen-3", Parent: "root-1", Kind: "generation", Start: ms("2025-01-02T10:00:04.000Z"), End: ms("2025-01-02T10:00:04.500Z"), Steps: []int{5, 6}},
	}, spanSummaries(tr.Spans))
	require.JSONEq(t, `{"order_id":"1182"}`, string(tr.Spans[2].Input))
	require.Equal(t, "2025-01-02T10:00:01.000000000Z", tr.Steps[2].Metadata["timestamp"])

	// Anthropic blocks with system, thinking and a tool_result in a user turn.
	require.Equal(t, []string{"system:You write code.", "user:List files", "reasoning:Use ls.", "assistant:Listing.",
		`call bash#toolu_9{"cmd":"ls"}`, "tool bash#toolu_9:main.go", "assistant:One file: main.go."}, callSteps(traces[1].Steps))

	// Internal shape: JSON strings, Responses items, instructions echoed in the output.
	traces, err = Langfuse{}.Parse(readFormatTestdata(t, "langfuse_internal.json"))
	require.NoError(t, err)
	require.Equal(t, "lf-internal-1", traces[0].ExternalID)
	require.Equal(t, []string{"system:Be helpful.", "user:Weather in Oslo?", "reasoning:Need weather.",
		`call weather#call_o{"city":"Oslo"}`, "tool weather#call_o:-3C", "assistant:It is -3C in Oslo."}, callSteps(traces[0].Steps))
	require.Equal(t, "-3C", mustString(t, traces[0].Spans[1].Output))
}

func mustISO(t *testing.T, s string) int64 {
	n, err := isoTimeNanos(s, "")
	require.NoError(t, err)
	return n
}

func mustString(t *testing.T, raw json.RawMessage) string {
	var s string
	require.NoError(t, json.Unmarshal(raw, &s))
	return s
}

func TestLangfuseVariants(t *testing.T) {
	cases := []struct {
		name string
		data string
		want []string
	}{
		{"single object, string prompt and string output",
			`{"id":"t","observations":[{"id":"g","type":"GENERATION","startTime":"2025-01-01T00:00:00Z","input":"Say hi","output":"hi"}]}`,
			[]string{"user:Say hi", "assistant:hi"}},
		{"single message input, Anthropic output without re-sent tool result pulls it from the TOOL observation",
			`{"trace":{"id":"t"},"observations":[
			 {"id":"g1","type":"GENERATION","startTime":"2025-01-01T00:00:00Z","input":"{\"role\":\"user\",\"content\":\"go\"}","output":"{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"tu\",\"name\":\"run\",\"input\":{\"x\":1}}]}"},
			 {"id":"tool","type":"TOOL","name":"run","startTime":"2025-01-01T00:00:01Z","input":"{\"input\":{\"x\":1}}","output":"{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}"},
			 {"id":"g2","type":"GENERATION","startTime":"2025-01-01T00:00:02Z","input":"{\"content\":\"role\"}","output":"{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}"}]}`,
			[]string{"user:go", `call run#tu{"x":1}`, "tool run#tu:ok", "assistant:done"}},
		{"{messages} input and choices output",
			`[{"id":"t","observations":[{"id":"g","type":"GENERATION","startTime":"2025-01-01T00:00:00Z","input":{"messages":[{"role":"user","content":"q"}]},"output":{"choices":[{"message":{"role":"assistant","content":"r"}}]}}]}]`,
			[]string{"user:q", "assistant:r"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traces, err := Langfuse{}.Parse([]byte(c.data))
			require.NoError(t, err)
			require.Equal(t, c.want, callSteps(traces[0].Steps))
		})
	}
}

func TestLangfuseErrors(t *testing.T) {
	cases := []struct{ name, data, field string }{
		{"observation ids only", `{"id":"t","observations":["a","b"]}`, "observations[0]"},
		{"no generations", `{"id":"t","observations":[{"id":"s","type":"SPAN"}]}`, "observations"},
		{"bad time", `[{"id":"t","observations":[{"id":"g","type":"GENERATION","startTime":"yesterday"}]}]`, "[0].observations[0].startTime"},
		{"missing observation id", `{"id":"t","observations":[{"type":"GENERATION"}]}`, "observations[0].id"},
		{"malformed", `{"id":"t","observations":[`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traces, err := Langfuse{}.Parse([]byte(c.data))
			require.Nil(t, traces)
			requireValidationError(t, err, 0, c.field)
		})
	}
}

// TestLangfuseRealSamples reads the real exports in the shared fixtures
// when they are there (a fresh clone has none: see fixtures_test.go).
func TestLangfuseRealSamples(t *testing.T) {
	cases := map[string][]string{
		"openai-agents-2025-09-30.trace.json": {"system:You are a helpful agent.", "user:What's the weather in Tokyo?",
			`call get_weather#call_Kud0j0DxWSmLzv9W5m6qVqXn{"city":"Tokyo"}`,
			"tool get_weather#call_Kud0j0DxWSmLzv9W5m6qVqXn:The weather in Tokyo is sunny.",
			"assistant:The weather in Tokyo is currently sunny. If you need more details like temperature or forecast for the upcoming days, just let me know!"},
		"claude-agent-2025-12-22.trace.json": nil,
	}
	for file, want := range cases {
		data := sharedFixture(t, filepath.Join("langfuse", file))
		a, err := DetectFormat(data)
		require.NoError(t, err)
		require.Equal(t, "langfuse", a.Name())
		traces, err := a.Parse(data)
		require.NoError(t, err, file)
		steps := callSteps(traces[0].Steps)
		if want != nil {
			require.Equal(t, want, steps)
			continue
		}
		// Claude Agent SDK: results come from the TOOL observations.
		require.Len(t, steps, 7)
		require.Equal(t, "user:What's the weather like in Berlin and New York?", steps[0])
		require.Equal(t, "tool mcp__weather__get_weather#toolu_01TKoqQLvY2UWuC49qnD48y7:Weather in Berlin: Cloudy, 59°F", steps[4])
		require.Equal(t, "tool mcp__weather__get_weather#toolu_01NtVat4vJLFfVd5TqdLHcA7:Weather in New York: Sunny, 75°F", steps[5])
	}
}

func FuzzLangfuse(f *testing.F) {
	seedTestdata(f, "langfuse")
	f.Add([]byte(`{"id":"t","observations":[{"id":"g","type":"GENERATION","input":"x","output":"y"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, Langfuse{}, data) })
}

func TestLangfuseBooleanScoresOfEveryEncodingAreRatings(t *testing.T) {
	scores := []any{
		map[string]any{"id": "a", "name": "ok", "dataType": "BOOLEAN", "value": true},
		map[string]any{"id": "b", "name": "ok", "dataType": "BOOLEAN", "value": false},
		map[string]any{"id": "c", "name": "ok", "dataType": "BOOLEAN", "value": json.Number("1.0")},
		map[string]any{"id": "d", "name": "ok", "dataType": "BOOLEAN", "value": json.Number("0"), "stringValue": "False"},
		map[string]any{"id": "e", "name": "ok", "dataType": "BOOLEAN", "stringValue": "True"},
		map[string]any{"id": "f", "name": "ok", "dataType": "BOOLEAN", "value": "maybe"},
	}
	got := map[string]any{}
	for _, a := range langfuseScores(scores) {
		if a.Rating == nil {
			got[a.Key] = nil
			continue
		}
		got[a.Key] = *a.Rating
	}
	require.Equal(t, map[string]any{
		"langfuse-score:a": 1, "langfuse-score:b": -1, "langfuse-score:c": 1,
		"langfuse-score:d": -1, "langfuse-score:e": 1, "langfuse-score:f": nil,
	}, got)
}
