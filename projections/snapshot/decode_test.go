package snapshot

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/projections"
)

// TestDecodeImportedMatchesDecode: the scanner and encoding/json agree on
// every payload (the same struct, maps and json.Numbers included), and the
// scanner hands off what it does not know.
func TestDecodeImportedMatchesDecode(t *testing.T) {
	kind := "client"
	full, _ := json.Marshal(events.TraceImportedV1{TraceID: "t1", ExternalID: "ext \"1\"\n", Title: "héllo <b>", SourceFormat: "stash",
		SourceID: "src", Metadata: map[string]any{"n": json.Number("12345678901234567890"), "x": []any{"a", nil}}, Revision: 2,
		Steps: []events.StepRecord{
			{ID: "s1", Index: 0, Step: domain.Step{Role: "user", Content: "line1\nline2 \u2028 \\ \"q\" é 😀"}},
			{ID: "s2", Index: 1, Step: domain.Step{Role: "assistant", ToolName: "grep", ToolCallID: "c1",
				ToolInput: map[string]any{"q": "x", "n": json.Number("1.5")}, Metadata: map[string]any{"label": map[string]any{"type": "tool_call"}}}},
		},
		Spans: []domain.Span{{ID: "sp", Name: "llm", Kind: &kind, StartNs: 1, EndNs: 2, Input: json.RawMessage(`{"a": 1}`), StepIndices: []int{0, 1}}},
	})
	untitled, _ := json.Marshal(events.TraceImportedV1{TraceID: "t2", Title: "Refund order 5521", TitleDerived: true, SourceFormat: "stash", Revision: 1,
		Steps: []events.StepRecord{{ID: "s1", Step: domain.Step{Role: "user", Content: "Refund order 5521"}}}})
	for _, raw := range []string{
		string(full),
		string(untitled),
		// jsonb's output style: spaces after ':' and ',', keys by length
		`{"title": "", "spans": null, "steps": [{"id": "a", "role": "user", "index": 0, "content": "x", "metadata": {}}, {"id": "b", "role": "tool", "index": 1, "content": "", "tool_input": null}], "revision": 1, "trace_id": "t", "source_format": "openai"}`,
		`{"steps": [], "trace_id": null}`,
		`{"steps": [{"id": "a", "role": "user"}], "steps": [{"id": "b"}]}`,
		`{"steps": null}`,
		`{"steps": [{"role": "user", "role": null}]}`,
		`{"Steps": [{"id": "a"}]}`,
		`{"steps": [{"id": "a", "extra": 1}]}`,
		`{"steps": [null]}`,
		`{"steps": [{"tool_input": {"a": 1}, "tool_input": {"b": 2}}]}`,
		`{"steps": [{"tool_input": "x"}]}`,
		`{"steps": [{"metadata": null, "metadata": {"a": 1.0}}]}`,
		`{"revision": 1.0}`,
		`{"revision": 99999999999999999999}`,
		`{"title_derived": true, "title_derived": null}`,
		`{"title_derived": false}`,
		`{"title_derived": 1}`,
		`{"title_derived": tru}`,
		`{"title": "bad` + "\x01" + `"}`,
		`{"title": "` + "\xff" + `"}`,
		`{"metadata": {"a": 1}, "metadata": {"b": 2}}`,
		`{"metadata": [1]}`,
		`{"spans": [{"id": "s", "start_ns": "5", "end_ns": "6", "step_indices": [0]}]}`,
		`{"trace_id": "t"} x`,
		`{"steps": [{"tool_input": {"a":}}]}`,
		`{"trace_id": "t"`,
	} {
		var fast, slow importedTrace
		ferr := projections.DecodeImported(events.Envelope{Payload: json.RawMessage(raw)}, &fast, decodeImportedFast)
		serr := events.Envelope{Payload: json.RawMessage(raw)}.Decode(&slow)
		if (ferr == nil) != (serr == nil) {
			t.Fatalf("%s: scanner err %v, Decode err %v", raw, ferr, serr)
		}
		if serr == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s:\nscanner %#v\nDecode  %#v", raw, fast, slow)
		}
	}
	for _, raw := range [][]byte{full, untitled} {
		var p importedTrace
		if !decodeImportedFast(raw, &p) {
			t.Fatalf("the scanner handed off a payload the event store writes: %s", raw)
		}
	}
}

func FuzzDecodeImported(f *testing.F) {
	f.Add([]byte(`{"title": "", "title_derived": true, "spans": null, "steps": [{"id": "a", "role": "user", "index": 0, "content": "x\n", "metadata": {"n": 1}, "tool_input": {}}], "revision": 1, "trace_id": "t"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var fast, slow importedTrace
		ferr := projections.DecodeImported(events.Envelope{Payload: raw}, &fast, decodeImportedFast)
		serr := events.Envelope{Payload: raw}.Decode(&slow)
		if serr != nil {
			if decodeImportedFast(raw, &fast) {
				t.Fatalf("%q: the scanner accepted what encoding/json rejects: %v", raw, serr)
			}
			return
		}
		if ferr != nil {
			t.Fatalf("%q: %v", raw, ferr)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nscanner %#v\nDecode  %#v", raw, fast, slow)
		}
	})
}
