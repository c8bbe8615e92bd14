package traces

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// TestSpanDeltaRoundTrip: an appended revision records the spans that are
// new or changed, and folding it gives back the rebuilt tree exactly, with
// the new order when spans moved; a tree that lost a stored span is
// written whole; a re-sent tree whose
// inputs only differ in form (as jsonb writes them back) is no change.
func TestSpanDeltaRoundTrip(t *testing.T) {
	span := func(id string, start, end int64, in string) domain.Span {
		return domain.Span{ID: id, Name: "chat", StartNs: start, EndNs: end, Input: json.RawMessage(in), StepIndices: []int{}}
	}
	fold := func(st State, d Decision) State {
		raw, err := json.Marshal(d.Payload)
		require.NoError(t, err)
		require.NoError(t, st.Apply(events.Envelope{Type: d.Type, Version: st.Version + 1, OwnerID: "o", Payload: raw}))
		return st
	}
	decide := func(st State, spans ...domain.Span) Decision {
		d, err := DecideImport(st, ImportInput{TraceID: "t1", Format: "otel", NewID: func() string { return "n" },
			Trace: domain.Trace{ExternalID: "x", Steps: steps("a", "b"), Spans: spans}})
		require.NoError(t, err)
		return d
	}
	a, b := span("a", 1, 2, `{"m":[1]}`), span("b", 3, 4, `{"m":[1,2]}`)
	st := fold(State{ID: "t1"}, decide(State{ID: "t1"}, a, b))

	c := span("c", 5, 6, `{"m":[1,2,3]}`)
	b2 := b
	b2.EndNs = 9 // the span ended later than first sent
	d := decide(st, a, b2, c)
	p := d.Payload.(events.TraceRevisedV1)
	require.True(t, p.SpansDelta)
	require.Equal(t, []string{"b", "c"}, spanIDs(p.Spans), "the changed span and the new one, not a")
	st = fold(st, d)
	require.True(t, sameSpans([]domain.Span{a, b2, c}, st.Spans), "folded: %v", spanIDs(st.Spans))

	// The same tree, its inputs written back in another form: no change.
	a3 := span("a", 1, 2, `{"m": [1]}`)
	require.True(t, decide(st, a3, b2, c).NoOp)

	// A span that starts before the stored ones (a root ending last): the
	// stored spans move, so the revision carries the new order and only
	// the root.
	root := span("r", 0, 10, `null`)
	d = decide(st, root, a, b2, c)
	p = d.Payload.(events.TraceRevisedV1)
	require.True(t, p.SpansDelta)
	require.Equal(t, []string{"r"}, spanIDs(p.Spans), "the root alone, not the spans it moved")
	require.Equal(t, []string{"r", "a", "b", "c"}, p.SpanOrder)
	st = fold(st, d)
	require.Equal(t, []string{"r", "a", "b", "c"}, spanIDs(st.Spans))
	require.True(t, sameSpans([]domain.Span{root, a, b2, c}, st.Spans))

	// Spans that move and change at once, and a new one between them.
	c2, a2 := c, a
	c2.StartNs, a2.EndNs = 1, 3
	mid := span("m", 2, 3, `{"m":[0]}`)
	d = decide(st, root, c2, mid, a2, b2)
	p = d.Payload.(events.TraceRevisedV1)
	require.True(t, p.SpansDelta)
	require.Equal(t, []string{"c", "m", "a"}, spanIDs(p.Spans))
	require.Equal(t, []string{"r", "c", "m", "a", "b"}, p.SpanOrder)
	st = fold(st, d)
	require.True(t, sameSpans([]domain.Span{root, c2, mid, a2, b2}, st.Spans), "folded: %v", spanIDs(st.Spans))

	// A stored span gone (the rebuilt tree no longer has it): the tree is
	// written whole.
	d = decide(st, root, c2, mid, a2, span("z", 20, 21, `null`))
	p = d.Payload.(events.TraceRevisedV1)
	require.False(t, p.SpansDelta, "b is gone: the tree is written whole")
	require.Empty(t, p.SpanOrder)
	st = fold(st, d)
	require.Equal(t, []string{"r", "c", "m", "a", "z"}, spanIDs(st.Spans))

	// A revision written before deltas (the whole tree, no flag) folds as
	// the whole tree.
	old := events.TraceRevisedV1{TraceID: "t1", Revision: st.Revision + 1, Mode: events.RevisionAppended, Spans: []domain.Span{a}}
	st = fold(st, Decision{Type: events.TraceRevised, Payload: old})
	require.Equal(t, []string{"a"}, spanIDs(st.Spans))
}

func spanIDs(spans []domain.Span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.ID
	}
	return out
}
