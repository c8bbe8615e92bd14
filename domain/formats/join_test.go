package formats

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

// Helpers shared by the otel, langfuse and langsmith tests.

// callStep is a compact description of a step: "role:content",
// "assistant:call name#id{json}", "tool#id:content", "reasoning:content".
func callStep(s domain.Step) string {
	switch {
	case isReasoning(s):
		return "reasoning:" + s.Content
	case s.IsToolCall():
		b, _ := json.Marshal(s.ToolInput)
		out := "call " + s.ToolName + "#" + s.ToolCallID + string(b)
		if s.Content != "" {
			out = s.Content + " | " + out
		}
		return out
	case s.Role == domain.RoleTool:
		return "tool " + s.ToolName + "#" + s.ToolCallID + ":" + s.Content
	}
	return string(s.Role) + ":" + s.Content
}

func callSteps(steps []domain.Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = callStep(s)
	}
	return out
}

// spanSummary is "id<parent kind [indices]".
type spanSummary struct {
	ID, Parent, Kind string
	Start, End       int64
	Steps            []int
}

func spanSummaries(spans []domain.Span) []spanSummary {
	out := make([]spanSummary, len(spans))
	for i, s := range spans {
		out[i] = spanSummary{ID: s.ID, Start: s.StartNs, End: s.EndNs, Steps: s.StepIndices}
		if s.ParentID != nil {
			out[i].Parent = *s.ParentID
		}
		if s.Kind != nil {
			out[i].Kind = *s.Kind
		}
	}
	return out
}

func readFormatTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// requireValidationError asserts err is a *domain.ValidationError whose
// field starts with field.
func requireValidationError(t *testing.T, err error, line int, field string) *domain.ValidationError {
	t.Helper()
	require.Error(t, err)
	var ve *domain.ValidationError
	require.True(t, errors.As(err, &ve), "want *domain.ValidationError, got %T: %v", err, err)
	require.Equal(t, line, ve.Line, "line of %v", err)
	require.True(t, strings.HasPrefix(ve.Field, field), "field %q of %v does not start with %q", ve.Field, err, field)
	return ve
}

// fuzzParse checks an adapter never panics and fails only with
// ValidationErrors, and that what it returns is valid.
func fuzzParse(t *testing.T, a Adapter, data []byte) {
	traces, err := a.Parse(data)
	if err != nil {
		if _, ok := errors.AsType[*domain.ValidationError](err); !ok {
			t.Fatalf("%s: error is %T, not *domain.ValidationError: %v", a.Name(), err, err)
		}
		require.Nil(t, traces)
		return
	}
	for _, tr := range traces {
		require.NoError(t, domain.ValidateTrace(tr, 0))
		_, err := json.Marshal(tr)
		require.NoError(t, err)
	}
}

func seedTestdata(f *testing.F, prefix string) {
	entries, err := os.ReadDir("testdata")
	require.NoError(f, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			f.Add(readFormatTestdata(f, e.Name()))
		}
	}
}

func ju(content string) domain.Step { return domain.Step{Role: domain.RoleUser, Content: content} }
func ja(content string) domain.Step { return domain.Step{Role: domain.RoleAssistant, Content: content} }
func jcall(id, name string, in map[string]any) domain.Step {
	return domain.Step{Role: domain.RoleAssistant, ToolName: name, ToolCallID: id, ToolInput: in}
}
func jres(id, content string) domain.Step {
	return domain.Step{Role: domain.RoleTool, ToolCallID: id, Content: content}
}

func TestJoinCalls(t *testing.T) {
	sys := domain.Step{Role: domain.RoleSystem, Content: "be nice"}
	c1 := jcall("c1", "search", map[string]any{"q": "x"})
	cases := []struct {
		name     string
		calls    []llmCall
		want     []string
		produced [][]int
	}{
		{
			name: "three calls re-sending history",
			calls: []llmCall{
				{Input: []domain.Step{sys, ju("hi")}, Output: []domain.Step{c1}},
				{Input: []domain.Step{sys, ju("hi"), c1, jres("c1", "found")}, Output: []domain.Step{ja("done")}},
				{Input: []domain.Step{sys, ju("hi"), c1, jres("c1", "found"), ja("done "), ju("thanks")}, Output: []domain.Step{ja("bye")}},
			},
			want: []string{"system:be nice", "user:hi", `call search#c1{"q":"x"}`, "tool search#c1:found",
				"assistant:done", "user:thanks", "assistant:bye"},
			produced: [][]int{{0, 1, 2}, {3, 4}, {5, 6}},
		},
		{
			name: "truncated history: only what follows the last known step is new",
			calls: []llmCall{
				{Input: []domain.Step{sys, ju("q1")}, Output: []domain.Step{ja("a1")}},
				{Input: []domain.Step{sys, ju("q1"), ja("a1"), ju("q2")}, Output: []domain.Step{ja("a2")}},
				{Input: []domain.Step{sys, ju("summary of q1"), ja("a2"), ju("q3")}, Output: []domain.Step{ja("a3")}},
			},
			want:     []string{"system:be nice", "user:q1", "assistant:a1", "user:q2", "assistant:a2", "user:q3", "assistant:a3"},
			produced: [][]int{{0, 1, 2}, {3, 4}, {5, 6}},
		},
		{
			name: "edited history without the last step: the differing suffix is appended",
			calls: []llmCall{
				{Input: []domain.Step{ju("q1")}, Output: []domain.Step{ja("a1")}},
				{Input: []domain.Step{ju("q1"), ja("a1 (edited)"), ju("q2")}, Output: []domain.Step{ja("a2")}},
			},
			want:     []string{"user:q1", "assistant:a1", "assistant:a1 (edited)", "user:q2", "assistant:a2"},
			produced: [][]int{{0, 1}, {2, 3, 4}},
		},
		{
			name: "a retry re-sending an older history adds only its output",
			calls: []llmCall{
				{Input: []domain.Step{ju("q1")}, Output: []domain.Step{ja("a1")}},
				{Input: []domain.Step{ju("q1")}, Output: []domain.Step{ja("a1 again")}},
			},
			want:     []string{"user:q1", "assistant:a1", "assistant:a1 again"},
			produced: [][]int{{0, 1}, {2}},
		},
		{
			name: "reasoning not re-sent does not break the prefix",
			calls: []llmCall{
				{Input: []domain.Step{ju("q1")}, Output: []domain.Step{reasoningStep("think"), ja("a1")}},
				{Input: []domain.Step{ju("q1"), ja("a1"), ju("q2")}, Output: []domain.Step{ja("a2")}},
			},
			want:     []string{"user:q1", "reasoning:think", "assistant:a1", "user:q2", "assistant:a2"},
			produced: [][]int{{0, 1, 2}, {3, 4}},
		},
		{
			name: "an output repeating the whole input keeps only the new messages",
			calls: []llmCall{
				{Input: []domain.Step{ju("q1")}, Output: []domain.Step{ju("q1"), ja("a1")}},
			},
			want:     []string{"user:q1", "assistant:a1"},
			produced: [][]int{{0, 1}},
		},
		{
			name: "a tool result whose call was never exported is unpaired",
			calls: []llmCall{
				{Input: []domain.Step{ju("q1"), jres("gone", "old result")}, Output: []domain.Step{ja("a1")}},
			},
			want:     []string{"user:q1", "tool #:old result", "assistant:a1"},
			produced: [][]int{{0, 1, 2}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			steps, produced := joinCalls(c.calls)
			require.Equal(t, c.want, callSteps(steps))
			require.Equal(t, c.produced, produced)
			require.NoError(t, domain.ValidateTrace(domain.Trace{Steps: steps}, 0))
		})
	}
}

func TestJoinCallsTimestampsAndUnmatched(t *testing.T) {
	steps, _ := joinCalls([]llmCall{{
		Input:     []domain.Step{ju("q"), jres("gone", "r")},
		Output:    []domain.Step{ja("x")},
		InputTime: rfc3339Nanos(1700000000123456789), OutputTime: rfc3339Nanos(1700000001000000000),
	}})
	require.Equal(t, "2023-11-14T22:13:20.123456789Z", steps[0].Metadata["timestamp"])
	require.Equal(t, "2023-11-14T22:13:21.000000000Z", steps[2].Metadata["timestamp"])
	require.Equal(t, "gone", steps[1].Metadata["unmatched_tool_call_id"])
	require.Empty(t, steps[1].ToolCallID)
}

// TestPerCallFormatsDetected: each of these formats' testdata is detected as
// itself, and no other adapter claims it first.
func TestPerCallFormatsDetected(t *testing.T) {
	entries, err := os.ReadDir("testdata")
	require.NoError(t, err)
	n := 0
	for _, e := range entries {
		want := ""
		for _, p := range []string{"otel", "langfuse", "langsmith"} {
			if strings.HasPrefix(e.Name(), p) {
				want = map[string]string{"otel": "otel", "langfuse": "langfuse", "langsmith": "langsmith"}[p]
			}
		}
		data := readFormatTestdata(t, e.Name())
		if want == "" {
			// Others' testdata is not claimed by these adapters.
			for _, ad := range []Adapter{OTel{}, Langfuse{}, LangSmith{}} {
				require.False(t, ad.Detect(data), "%s claims %s", ad.Name(), e.Name())
			}
			continue
		}
		n++
		ad, err := DetectFormat(data)
		require.NoError(t, err, e.Name())
		require.Equal(t, want, ad.Name(), e.Name())
		_, err = Auto{}.Parse(data)
		require.NoError(t, err, e.Name())
	}
	require.GreaterOrEqual(t, n, 7)
	stash := []byte(`{"id":"s1","steps":[{"role":"user","content":"hi"}]}` + "\n")
	for _, ad := range []Adapter{OTel{}, Langfuse{}, LangSmith{}} {
		require.False(t, ad.Detect(stash), ad.Name())
	}
}

// TestPerCallFormatsSurviveCorruption is a deterministic stand-in for the
// fuzz targets on a busy machine: every testdata file, truncated and with
// bytes replaced at many points, never panics and fails only with
// ValidationErrors.
func TestPerCallFormatsSurviveCorruption(t *testing.T) {
	adapters := map[string]Adapter{"otel": OTel{}, "langfuse": Langfuse{}, "langsmith": LangSmith{}}
	entries, err := os.ReadDir("testdata")
	require.NoError(t, err)
	for _, e := range entries {
		for prefix, ad := range adapters {
			if !strings.HasPrefix(e.Name(), prefix) {
				continue
			}
			data := readFormatTestdata(t, e.Name())
			step := max(1, len(data)/150)
			for i := 0; i < len(data); i += step {
				fuzzParse(t, ad, data[:i])
				for _, b := range []byte{'"', '{', ']', '0', 'x'} {
					mut := append([]byte(nil), data...)
					mut[i] = b
					fuzzParse(t, ad, mut)
				}
			}
		}
	}
}
