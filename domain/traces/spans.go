package traces

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/criticml/critic/domain"
)

// spanChanges is what an appended revision records of the rebuilt span
// tree next against the stored one: only the spans that are new or changed
// (delta true) when every stored span is still in next, else next whole.
// order is next's span ids when a span moved (mergeSpans then places every
// span by it), nil when the stored spans keep their places and the new ones
// follow them. A live trace grows at its end (spans sort by start time);
// a span that starts before the stored ones (an agent run's root, which
// ends and so arrives last) moves them, and writing the whole tree again
// for it — every LLM span's input the conversation so far — made the root
// of a 600-call run the largest write of the run, past the read model's
// wait.
func spanChanges(stored, next []domain.Span) (spans []domain.Span, delta bool, order []string) {
	if len(stored) == 0 || len(next) < len(stored) {
		return next, false, nil
	}
	at := make(map[string]int, len(stored))
	for i, sp := range stored {
		at[sp.ID] = i
	}
	changes := []domain.Span{}
	found, moved := 0, false
	for i, sp := range next {
		j, ok := at[sp.ID]
		if !ok {
			changes = append(changes, sp)
			moved = moved || i < len(stored)
			continue
		}
		found++
		moved = moved || j != i
		if !sameSpan(stored[j], sp) {
			changes = append(changes, sp)
		}
	}
	if found != len(stored) {
		return next, false, nil // a stored span is gone
	}
	if moved {
		order = make([]string, len(next))
		for i, sp := range next {
			order[i] = sp.ID
		}
	}
	return changes, true, order
}

// mergeSpans applies an appended revision's span changes to the stored
// tree: a changed span replaces its stored copy, a new one is added; with
// order every span takes its place there, else a changed one keeps its
// place and new ones follow the others in the order given.
func mergeSpans(stored, changes []domain.Span, order []string) []domain.Span {
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
	if len(order) == 0 {
		return out
	}
	placed := make([]domain.Span, 0, len(order))
	for _, id := range order {
		if i, ok := at[id]; ok {
			placed = append(placed, out[i])
		}
	}
	return placed
}

// sameSpans reports whether two span trees say the same, span by span.
func sameSpans(a, b []domain.Span) bool {
	return slices.EqualFunc(a, b, sameSpan)
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
