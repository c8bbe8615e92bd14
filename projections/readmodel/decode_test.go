package readmodel

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/projections"
)

// TestDecodeImportedMatchesDecode: the scanner and encoding/json agree on
// every payload, and the scanner hands off what it does not know.
func TestDecodeImportedMatchesDecode(t *testing.T) {
	kind := "client"
	full, _ := json.Marshal(events.TraceImportedV1{TraceID: "t1", ExternalID: "ext \"1\"\n", Title: "héllo <b>", SourceFormat: "stash",
		SourceID: "src", Metadata: map[string]any{"n": json.Number("12345678901234567890"), "x": []any{"a", nil}}, Revision: 2,
		Steps: []events.StepRecord{
			{ID: "s1", Index: 0, Step: domain.Step{Role: "user", Content: "line1\nline2 \u2028 \\ \"q\" é 😀"}},
			{ID: "s2", Index: 1, Step: domain.Step{Role: "assistant", ToolName: "grep", ToolCallID: "c1",
				ToolInput: map[string]any{"q": "x", "n": json.Number("1.5")}, Metadata: map[string]any{"m": true}}},
		},
		Spans: []domain.Span{{ID: "sp", Name: "llm", Kind: &kind, StartNs: 1, EndNs: 2, Input: json.RawMessage(`{"a": 1}`), StepIndices: []int{0, 1}}},
	})
	for _, raw := range []string{
		string(full),
		// jsonb's output style: spaces after ':' and ',', keys by length
		`{"title": "", "spans": null, "steps": [{"id": "a", "role": "user", "index": 0, "content": "x", "metadata": {}}, {"id": "b", "role": "tool", "index": 1, "content": "", "tool_input": null}], "revision": 1, "trace_id": "t", "source_format": "openai"}`,
		`{"steps": [], "trace_id": null}`,
		`{"steps": [{"id": "a", "role": "user"}], "steps": [{"id": "b"}]}`,
		`{"steps": null}`,
		`{"Steps": [{"id": "a"}]}`,
		`{"steps": [{"id": "a", "extra": 1}]}`,
		`{"steps": [null]}`,
		`{"revision": 1.0}`,
		`{"revision": 01}`,
		`{"revision": 99999999999999999999}`,
		`{"title": "bad` + "\x01" + `"}`,
		`{"title": "` + "\xff" + `"}`,
		`{"title": 5}`,
		`{"steps": [{"content": "a\u00e9\ud83d\ude00"}]}`,
		`{"metadata": {"a": 1}, "metadata": {"b": 2}}`,
		`{"spans": [{"id": "s", "start_ns": "5", "end_ns": "6", "step_indices": [0]}]}`,
		`{"trace_id": "t"} x`,
		`{"steps": [{"tool_input": {"a":}}]}`,
		`{"steps": [{"metadata": [}]}`,
		`{"trace_id": "t"`,
		`{"title": "Refund 5521", "title_derived": true, "steps": [{"id": "a", "role": "user", "index": 0, "content": "x"}], "trace_id": "t"}`,
		`{"title_derived": tru}`,
		`{"title_derived": [}`,
	} {
		var fast, slow importedTrace
		ferr := projections.DecodeImported(events.Envelope{Payload: json.RawMessage(raw)}, &fast, decodeImportedFast)
		serr := events.Envelope{Payload: json.RawMessage(raw)}.Decode(&slow)
		if (ferr == nil) != (serr == nil) {
			t.Fatalf("%s: scanner err %v, Decode err %v", raw, ferr, serr)
		}
		if serr != nil {
			continue
		}
		fb, _ := json.Marshal(fast)
		sb, _ := json.Marshal(slow)
		if string(fb) != string(sb) || len(fast.Steps) != len(slow.Steps) || (fast.Steps == nil) != (slow.Steps == nil) {
			t.Fatalf("%s:\nscanner %s\nDecode  %s", raw, fb, sb)
		}
		if !reflect.DeepEqual(fast.Metadata, slow.Metadata) {
			t.Fatalf("%s: metadata %#v vs %#v", raw, fast.Metadata, slow.Metadata)
		}
	}
	untitled, _ := json.Marshal(events.TraceImportedV1{TraceID: "t2", Title: "Refund order 5521", TitleDerived: true, SourceFormat: "stash", Revision: 1,
		Steps: []events.StepRecord{{ID: "s1", Step: domain.Step{Role: "user", Content: "Refund order 5521"}}}})
	for _, raw := range [][]byte{full, untitled} {
		var p importedTrace
		if !decodeImportedFast(raw, &p) {
			t.Fatalf("the scanner handed off a payload the event store writes: %s", raw)
		}
	}
}

func FuzzDecodeImported(f *testing.F) {
	f.Add([]byte(`{"title": "", "spans": null, "steps": [{"id": "a", "role": "user", "index": 0, "content": "x\n", "metadata": {}}], "revision": 1, "trace_id": "t"}`))
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
		fb, _ := json.Marshal(fast)
		sb, _ := json.Marshal(slow)
		if string(fb) != string(sb) || !reflect.DeepEqual(fast.Metadata, slow.Metadata) {
			t.Fatalf("%q:\nscanner %s\nDecode  %s", raw, fb, sb)
		}
	})
}
