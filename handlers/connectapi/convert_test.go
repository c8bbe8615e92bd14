package connectapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/projections/readmodel"
)

// Spans only arrive through OTLP so far, so their mapping is checked here on
// a read-model view: nanosecond times keep full precision, free-form input
// and output keep their JSON, and the JSON encoding writes times as decimal
// strings exactly like REST.
func TestDetailToProtoSpans(t *testing.T) {
	parent, kind := "a", "llm"
	minusOne, no := -1, "no"
	d := &readmodel.TraceDetail{
		TraceSummary: readmodel.TraceSummary{ID: "t1", Title: "x", CreatedAt: time.Unix(1700000000, 5).UTC()},
		Metadata:     json.RawMessage(`{}`),
		Steps:        []readmodel.Step{{ID: "s0", Role: "user", Content: "hi", ToolInput: json.RawMessage("null"), Metadata: json.RawMessage("null")}},
		Spans: []readmodel.Span{{ID: "b", ParentID: &parent, Name: "chat", Kind: &kind,
			StartNs: 1700000000123456789, EndNs: 1700000000987654321,
			Input: json.RawMessage(`[{"role":"user","content":"hi"}]`), Output: json.RawMessage("null"), StepIndices: []int{0}}},
		Annotations: []readmodel.Annotation{{ID: "n1", TraceID: "t1", Rating: &minusOne, Comment: &no, Quote: json.RawMessage("null"),
			AuthorID: "u", AuthorName: "alice", CreatedAt: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)}},
	}
	p, err := detailToProto(d)
	require.NoError(t, err)
	require.Len(t, p.Spans, 1)
	sp := p.Spans[0]
	require.EqualValues(t, 1700000000123456789, sp.StartNs)
	require.EqualValues(t, 1700000000987654321, sp.EndNs)
	require.Equal(t, "a", sp.GetParentId())
	require.Equal(t, []any{map[string]any{"role": "user", "content": "hi"}}, sp.Input.AsInterface())
	require.Nil(t, sp.Output)
	require.Equal(t, []int32{0}, sp.StepIndices)
	require.Nil(t, p.Steps[0].ToolInput)
	require.Len(t, p.Annotations, 1)
	require.EqualValues(t, -1, p.Annotations[0].GetRating())
	require.Nil(t, p.Annotations[0].StepId)
	require.Equal(t, "alice", p.Annotations[0].AuthorName)

	b, err := jsonCodec{name: "json"}.Marshal(p)
	require.NoError(t, err)
	require.Contains(t, string(b), `"start_ns":"1700000000123456789"`)
	require.Contains(t, string(b), `"parent_id":"a"`)
}

func TestLineWriterSplitsOnNewlines(t *testing.T) {
	var got []string
	w := &lineWriter{send: func(b []byte) error { got = append(got, string(b)); return nil }}
	for _, chunk := range []string{`{"a":1}` + "\n" + `{"b"`, `:2}` + "\n", `{"c":3}`} {
		n, err := w.Write([]byte(chunk))
		require.NoError(t, err)
		require.Equal(t, len(chunk), n)
	}
	require.NoError(t, w.flush())
	require.Equal(t, []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}, got)
}
