package traces

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/criticml/critic/domain"
)

// spanChanges is what an appended revision records of the rebuilt span
// tree next against the stored one: only the spans that are new or changed
// (delta true) when mergeSpans(stored, changes) gives next exactly — every
// stored span still in its place, the new ones after them — else next whole.
// A live trace grows at its end (spans sort by start time), so the whole
// tree is written again only when a span starts before the stored ones (a
// root span that ends last, re-sent spans that moved).
func spanChanges(stored, next []domain.Span) (spans []domain.Span, delta bool) {
	if len(stored) == 0 || len(next) < len(stored) {
		return next, false
	}
	changes := []domain.Span{}
	for i := range stored {
		if stored[i].ID != next[i].ID {
			return next, false
		}
		if !sameSpan(stored[i], next[i]) {
			changes = append(changes, next[i])
		}
	}
	return append(changes, next[len(stored):]...), true
}

// mergeSpans applies an appended revision's span changes to the stored
// tree: a changed span replaces its stored copy in place, a new one is
// added after the others in the order given.
func mergeSpans(stored, changes []domain.Span) []domain.Span {
	out := slices.Clone(stored)
	at := make(map[string]int, len(out))
	for i, sp := range out {
		at[sp.ID] = i
	}
	for _, sp := range changes {
		if i, ok := at[sp.ID]; ok {
			out[i] = sp
			continue
		}
		at[sp.ID] = len(out)
		out = append(out, sp)
	}
	return out
}

// sameSpans reports whether two span trees say the same, span by span.
func sameSpans(a, b []domain.Span) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameSpan(a[i], b[i]) {
			return false
		}
	}
	return true
}

// sameSpan compares a rebuilt span with its stored copy. Input and output
// are compared as bytes first and as JSON values (equalJSON: a decode of
// the span's whole conversation) only when the bytes differ: the live
// receiver rebuilds unchanged spans with their stored bytes
// (formats.RebuildConversation's built), where a re-encoded copy and the
// one PostgreSQL's jsonb writes back would always differ in form.
func sameSpan(a, b domain.Span) bool {
	return a.ID == b.ID && a.Name == b.Name && a.StartNs == b.StartNs && a.EndNs == b.EndNs &&
		samePtr(a.ParentID, b.ParentID) && samePtr(a.Kind, b.Kind) && slices.Equal(a.StepIndices, b.StepIndices) &&
		sameRaw(a.Input, b.Input) && sameRaw(a.Output, b.Output)
}

func samePtr(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// sameRaw: nil and JSON null are the same absent value (a span written
// without input reads back as null).
func sameRaw(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if isNull(a) || isNull(b) {
		return isNull(a) && isNull(b)
	}
	return equalJSON(a, b)
}

func isNull(r json.RawMessage) bool {
	return len(r) == 0 || bytes.Equal(bytes.TrimSpace(r), []byte("null"))
}
