package commands

import (
	"context"
	"sort"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/domain/traces"
)

// ReceiveOTelSpans stores spans from the live OTLP receiver per (owner, trace
// id, span id) and rebuilds every trace the request touched from all of that
// trace's stored spans, upserting it like a re-import (external id = hex
// trace id, format otel). A trace whose spans carry no LLM messages yet is
// stored but not listed. If any touched trace fails to build, nothing of the
// request is stored.
//
// Exporters retry whole batches, so a request may repeat spans already
// stored: a span equal to its stored copy is skipped, a request of nothing
// but such spans appends nothing, and the rebuilt trace is decided as a live
// trace (equal → no-op, grown at the end → appended with the same step ids,
// changed earlier → replaced), so a retry never costs the review its steps.
func (c *Commands) ReceiveOTelSpans(ctx context.Context, actor Actor, raws []formats.RawSpan, sourceID string) (Result, error) {
	byTrace := map[string][]formats.RawSpan{}
	var order []string
	for _, r := range raws {
		if _, ok := byTrace[r.TraceID]; !ok {
			order = append(order, r.TraceID)
		}
		byTrace[r.TraceID] = append(byTrace[r.TraceID], r)
	}
	return retryOnConflict(func() (Result, error) {
		streams := make([]string, len(order))
		for i, hexID := range order {
			streams[i] = events.TraceStream(TraceIDFor(actor.UserID, hexID))
		}
		loaded, err := c.store.LoadStreams(ctx, streams)
		if err != nil {
			return Result{}, err
		}
		expected := map[string]int64{}
		var evs []events.New
		for i, hexID := range order {
			traceID := TraceIDFor(actor.UserID, hexID)
			st, err := traces.Fold(traceID, loaded[streams[i]])
			if err != nil {
				return Result{}, err
			}
			expected[streams[i]] = st.Version

			received := events.OTelSpansReceivedV1{TraceID: traceID, OTelTraceID: hexID}
			all := map[string]formats.RawSpan{}
			for id, raw := range st.OTelSpans {
				all[id] = formats.RawSpan{TraceID: hexID, SpanID: id, JSON: raw}
			}
			for _, r := range byTrace[hexID] {
				if stored, ok := all[r.SpanID]; ok && traces.SameSpanJSON(stored.JSON, r.JSON) {
					continue // a re-sent span (exporter retry): nothing to store
				}
				all[r.SpanID] = r
				received.Spans = append(received.Spans, events.RawSpanRecord{SpanID: r.SpanID, JSON: r.JSON})
			}
			if len(received.Spans) == 0 {
				continue // every span of this trace was already stored as sent
			}
			ids := make([]string, 0, len(all))
			for id := range all {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			spans := make([]formats.RawSpan, len(ids))
			for j, id := range ids {
				spans[j] = all[id]
			}
			t, hasLLM, err := formats.RebuildTrace(spans)
			if err != nil {
				return Result{}, err
			}
			evs = append(evs, events.New{ID: newID(), Stream: streams[i], OwnerID: actor.UserID, Type: events.OTelSpansReceived, Payload: received})
			if !hasLLM {
				continue
			}
			d, err := traces.DecideImport(st, traces.ImportInput{TraceID: traceID, Trace: t, Format: formats.OTel{}.Name(), ExplicitSourceID: sourceID, NewID: newID})
			if err != nil {
				return Result{}, err
			}
			if !d.NoOp {
				evs = append(evs, events.New{ID: newID(), Stream: streams[i], OwnerID: actor.UserID, Type: d.Type, Payload: d.Payload})
				for _, rm := range d.Removals {
					evs = append(evs, events.New{ID: newID(), Stream: streams[i], OwnerID: actor.UserID, Type: events.AnnotationRemoved, Payload: rm})
				}
			}
		}
		return c.append(ctx, actor, expected, evs)
	})
}
