package formats

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLangSmithTestdata(t *testing.T) {
	traces, err := LangSmith{}.Parse(readFormatTestdata(t, "langsmith_runs.jsonl"))
	require.NoError(t, err)
	require.Len(t, traces, 2)

	tr := traces[0]
	require.Equal(t, "8f3a2c1e-0000-4000-8000-000000000001", tr.ExternalID)
	require.Equal(t, map[string]any{"agent": "AgentExecutor", "model": "gpt-4o-mini", "provider": "openai"}, tr.Metadata)
	require.Equal(t, []string{"system:You are a math tutor.", "user:What is 2+2? Use the calculator.",
		`call calculator#call_c1{"expr":"2+2"}`, "tool calculator#call_c1:4", "assistant:2+2 is 4."}, callSteps(tr.Steps))
	ms := func(s string) int64 { return mustISO(t, s) }
	root := "8f3a2c1e-0000-4000-8000-000000000001"
	require.Equal(t, []spanSummary{
		{ID: root, Kind: "chain", Start: ms("2025-03-01T12:00:00Z"), End: ms("2025-03-01T12:00:05Z"), Steps: []int{}},
		{ID: "run-llm-1", Parent: root, Kind: "llm", Start: ms("2025-03-01T12:00:00.1Z"), End: ms("2025-03-01T12:00:01Z"), Steps: []int{0, 1, 2}},
		{ID: "run-tool-1", Parent: root, Kind: "tool", Start: ms("2025-03-01T12:00:01.1Z"), End: ms("2025-03-01T12:00:01.2Z"), Steps: []int{}},
		{ID: "run-llm-2", Parent: root, Kind: "llm", Start: ms("2025-03-01T12:00:01.3Z"), End: ms("2025-03-01T12:00:02Z"), Steps: []int{3, 4}},
	}, spanSummaries(tr.Spans))
	require.JSONEq(t, `{"input":"2+2"}`, string(tr.Spans[2].Input))

	require.Equal(t, []string{"user:Hi", "assistant:Hello!", "user:Bye", "assistant:Goodbye!"}, callSteps(traces[1].Steps))
}

func lsRunLine(id, parent, typ, start, inputs, outputs string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return `{"id":"` + id + `","trace_id":"tr","parent_run_id":` + p + `,"run_type":"` + typ + `","name":"n","start_time":"` + start +
		`","end_time":"` + start + `","inputs":` + inputs + `,"outputs":` + outputs + `}`
}

func TestLangSmithVariants(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
		want  []string
	}{
		{"prompts and text generations",
			[]string{lsRunLine("r1", "", "llm", "2025-01-01T00:00:00", `{"prompts":["Tell a joke"]}`, `{"generations":[[{"text":"Why?"}]]}`)},
			[]string{"user:Tell a joke", "assistant:Why?"}},
		{"dict messages with data and OpenAI tool calls in additional_kwargs",
			[]string{lsRunLine("r1", "", "llm", "2025-01-01T00:00:00", `{"messages":[[{"type":"human","data":{"content":"sum 1 2"}}]]}`,
				`{"generations":[[{"text":"","message":{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"","additional_kwargs":{"tool_calls":[{"id":"c","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"b\":2}"}}]}}}}]]}`)},
			[]string{"user:sum 1 2", `call add#c{"a":1,"b":2}`}},
		{"nested llm run is not counted twice",
			[]string{
				lsRunLine("r1", "", "llm", "2025-01-01T00:00:00", `{"messages":[{"role":"user","content":"q"}]}`, `{"content":"a","role":"assistant"}`),
				lsRunLine("r2", "r1", "llm", "2025-01-01T00:00:01", `{"messages":[{"role":"user","content":"q"}]}`, `{"choices":[{"message":{"role":"assistant","content":"a (inner)"}}]}`),
			},
			[]string{"user:q", "assistant:a"}},
		{"ordered by start_time, not by line",
			[]string{
				lsRunLine("r2", "", "llm", "2025-01-01T00:00:05Z", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":"q2"}]}`, `{"content":"a2"}`),
				lsRunLine("r1", "", "llm", "2025-01-01T00:00:00Z", `{"messages":[{"role":"user","content":"q"}]}`, `{"content":"a"}`),
			},
			[]string{"user:q", "assistant:a", "user:q2", "assistant:a2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traces, err := LangSmith{}.Parse([]byte(strings.Join(c.lines, "\n")))
			require.NoError(t, err)
			require.Len(t, traces, 1)
			require.Equal(t, c.want, callSteps(traces[0].Steps))
		})
	}
	// A JSON array of runs is accepted too.
	traces, err := LangSmith{}.Parse([]byte("[" + lsRunLine("r1", "", "llm", "2025-01-01T00:00:00", `{"prompts":["x"]}`, `{"generations":[[{"text":"y"}]]}`) + "]"))
	require.NoError(t, err)
	require.Equal(t, []string{"user:x", "assistant:y"}, callSteps(traces[0].Steps))
}

func TestLangSmithErrors(t *testing.T) {
	ok := lsRunLine("r1", "", "llm", "2025-01-01T00:00:00", `{"prompts":["x"]}`, `{"generations":[[{"text":"y"}]]}`)
	cases := []struct {
		name  string
		data  string
		line  int
		field string
	}{
		{"malformed line", ok + "\n{", 2, ""},
		{"bad time", ok + "\n" + strings.Replace(ok, "2025-01-01T00:00:00", "noon", 1), 2, "start_time"},
		{"missing id", `{"trace_id":"t","run_type":"llm"}`, 1, "id"},
		{"no llm run", strings.Replace(ok, `"run_type":"llm"`, `"run_type":"chain"`, 1), 1, ""},
		{"not an object", "[1]", 0, "[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traces, err := LangSmith{}.Parse([]byte(c.data))
			require.Nil(t, traces)
			requireValidationError(t, err, c.line, c.field)
		})
	}
}

func FuzzLangSmith(f *testing.F) {
	seedTestdata(f, "langsmith")
	f.Add([]byte(`{"id":"r","trace_id":"t","run_type":"llm","inputs":{"prompts":["x"]},"outputs":{"generations":[[{"text":"y"}]]}}`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, LangSmith{}, data) })
}
