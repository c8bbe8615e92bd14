package formats

import (
	"encoding/json"
	"testing"

	"github.com/criticml/critic/domain"
)

const stashSample = `{"id":"t-1","title":"Refund","metadata":{"agent":"bot","n":12345678901234567890},"steps":[` +
	`{"role":"system","content":"policy"},{"role":"user","content":"refund 1182","metadata":{"timestamp":"2026-09-29T03:12:00Z"}},` +
	`{"role":"assistant","content":"","tool_name":"lookup","tool_input":{"id":"1182"},"tool_call_id":"c1"},` +
	`{"role":"tool","content":"{\"ok\":true}","tool_name":"lookup","tool_call_id":"c1"},{"role":"assistant","content":"done"}],` +
	`"spans":[{"id":"s1","parent_id":null,"name":"chat","kind":"client","start_ns":"1700000000000000001","end_ns":"1700000000000000002","input":null,"output":null,"step_indices":[4]}]}`

// TestStashRoundTrip: what the export writes re-imports to the same trace.
func TestStashRoundTrip(t *testing.T) {
	first, err := Stash{}.Parse([]byte(stashSample))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(first[0])
	if err != nil {
		t.Fatal(err)
	}
	second, err := Stash{}.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(second)
	if string(a) != string(b) {
		t.Fatalf("round trip changed the trace:\n%s\n%s", a, b)
	}
	if first[0].Spans[0].StartNs != 1700000000000000001 {
		t.Fatalf("nanoseconds lost: %d", first[0].Spans[0].StartNs)
	}
	if got := string(mustJSON(first[0].Metadata["n"])); got != "12345678901234567890" {
		t.Fatalf("large integer changed: %s", got)
	}
}

func TestStashErrorsNameLineAndField(t *testing.T) {
	cases := []struct{ data, field string }{
		{stashSample + "\n" + `{"steps":[{"role":"robot","content":"x"}]}`, "steps[0].role"},
		{stashSample + "\n" + `{"steps":[{"role":"user","content":5}]}`, "steps[0].content"},
		{stashSample + "\n" + `{"steps":[{"role":"user","content":"x","tool_input":[1]}]}`, "steps[0].tool_input"},
		{stashSample + "\n" + `{"steps":[{"role":"user","content":"x"}],"spans":[{"id":"a","name":"n","start_ns":"2","end_ns":"1","step_indices":[]}]}`, "spans[0].end_ns"},
	}
	for _, c := range cases {
		_, err := Stash{}.Parse([]byte(c.data))
		v, ok := err.(*domain.ValidationError)
		if !ok || v.Line != 2 || v.Field != c.field {
			t.Fatalf("%s: got %#v", c.field, err)
		}
	}
}

func FuzzStash(f *testing.F) {
	f.Add([]byte(stashSample))
	f.Add([]byte(`{"steps":[{"role":"user","content":"a"},{"role":"tool","content":"r","tool_call_id":"x"}]}`))
	f.Add([]byte("{\"steps\": [}\n"))
	f.Fuzz(func(t *testing.T, data []byte) { parseInvariants(t, Stash{}, data) })
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
