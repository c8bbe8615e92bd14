package formats

import (
	"reflect"
	"testing"

	"github.com/criticml/critic/domain"
)

// slowStash is the step-by-step path alone.
func slowStash(raw []byte, line int) (domain.Trace, error) {
	var st stashTrace
	if err := decodeJSON(raw, &st); err != nil {
		return domain.Trace{}, err
	}
	t, err := st.canonical(line)
	if err != nil {
		return t, err
	}
	return t, domain.ValidateTrace(t, line)
}

func checkStashFast(t *testing.T, raw []byte) {
	fast, ok := parseStashFast(raw, 1)
	slow, err := slowStash(raw, 1)
	if !ok {
		return // the slow path decides, as before
	}
	if err != nil {
		t.Fatalf("%q: the one-pass path accepted a line the step-by-step path rejects: %v", raw, err)
	}
	if len(fast.Steps) != len(slow.Steps) || !reflect.DeepEqual(fast.Steps, slow.Steps) ||
		fast.ExternalID != slow.ExternalID || fast.Title != slow.Title ||
		!reflect.DeepEqual(fast.Metadata, slow.Metadata) || !reflect.DeepEqual(fast.Spans, slow.Spans) {
		t.Fatalf("%q:\none pass     %#v\nstep by step %#v", raw, fast, slow)
	}
}

// TestStashFastPathAgrees: the one-pass path accepts only what the
// step-by-step path accepts, with the same trace.
func TestStashFastPathAgrees(t *testing.T) {
	for _, l := range []string{
		stashSample,
		`{"id": 12, "title": "t", "metadata": {"n": 1.50}, "steps": [{"role": "user", "content": "a\n\u00e9"}, {"role": "assistant", "tool_name": "f", "tool_call_id": "c", "tool_input": {"q": 1}, "metadata": {}}, {"role": "tool", "content": null, "tool_call_id": "c"}]}`,
		`{"steps": [null]}`, `{"steps": [1]}`, `{"steps": [{"role": "bot"}]}`, `{"steps": [{"role": "user", "content": 5}]}`,
		`{"steps": [{"role": "user", "tool_input": []}]}`, `{"steps": [{"role": "user", "tool_input": "x"}]}`, `{"steps": []}`,
		`{"steps": null}`, `{"id": true, "steps": [{"role": "user"}]}`, `{"id": null, "steps": [{"role": "user", "content": "a", "content": null}]}`,
		`{"Steps": [{"ROLE": "user", "Content": "x"}]}`, `{"steps": [{"role": "user"}]} {}`, `{"steps": [{"role": "user", "metadata": {"a": 1}, "metadata": {"b": 2}}]}`,
	} {
		checkStashFast(t, []byte(l))
	}
}

func FuzzStashFastPath(f *testing.F) {
	f.Add([]byte(stashSample))
	f.Add([]byte(`{"steps":[{"role":"user","content":"a"},{"role":"tool","content":"r","tool_call_id":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { checkStashFast(t, data) })
}
