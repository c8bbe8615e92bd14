package commands

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/domain/traces"
)

// OTelReceipt is what a live OTLP request stored and what it could not use,
// per trace: OTLP's partial_success reports the rejected part, so one trace's
// content never fails another's (exporters drop a whole batch on a 400).
type OTelReceipt struct {
	Result
	// RejectedSpans and RejectedLogs count the request's spans and log
	// records of the traces that could not be built; ErrorMessage names
	// each such trace and why ("" when nothing was rejected).
	RejectedSpans, RejectedLogs int64
	ErrorMessage                string
}

// ReceiveOTelSpans stores spans and log records from the live OTLP receiver
// per (owner, trace id, span id or log key) and rebuilds every trace the
// request touched from all of that trace's stored spans and log records,
// upserting it like a re-import (external id = hex trace id, format otel).
// A trace with no reviewable LLM messages yet (none, or only system
// instructions) is stored but not listed. A trace whose records cannot be
// built is rejected alone: none of its new records are stored and the
// receipt says why; the request's other traces are stored.
//
// Exporters retry whole batches, so a request may repeat records already
// stored: a record equal to its stored copy is skipped, a request of nothing
// but such records appends nothing, and the rebuilt trace is decided as a
// live trace (equal → no-op, grown at the end → appended with the same step
// ids, changed earlier → replaced), so a retry never costs the review its
// steps.
//
// Writers of one trace are serialized within the process and retried with
// jittered backoff on a version conflict (another process), so concurrent
// exports of one trace all apply; see retryContended.
func (c *Commands) ReceiveOTelSpans(ctx context.Context, actor Actor, raws []formats.RawSpan, sourceID string) (OTelReceipt, error) {
	byTrace := map[string][]formats.RawSpan{}
	var order []string
	for _, r := range raws {
		if _, ok := byTrace[r.TraceID]; !ok {
			order = append(order, r.TraceID)
		}
		byTrace[r.TraceID] = append(byTrace[r.TraceID], r)
	}
	streams := make([]string, len(order))
	for i, hexID := range order {
		streams[i] = events.TraceStream(TraceIDFor(actor.UserID, hexID))
	}
	unlock := c.locks.lock(streams)
	defer unlock()

	var receipt OTelReceipt
	res, err := retryContended(ctx, func() (Result, error) {
		receipt = OTelReceipt{}
		var problems []string
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
			tevs, err := c.receiveTrace(actor, st, streams[i], traceID, hexID, byTrace[hexID], sourceID)
			var v *domain.ValidationError
			if errors.As(err, &v) {
				for _, r := range byTrace[hexID] {
					if r.IsLog() {
						receipt.RejectedLogs++
					} else {
						receipt.RejectedSpans++
					}
				}
				problems = append(problems, fmt.Sprintf("trace %s: %s", hexID, v.Error()))
				continue
			}
			if err != nil {
				return Result{}, err
			}
			if len(tevs) > 0 {
				expected[streams[i]] = st.Version
				evs = append(evs, tevs...)
			}
		}
		receipt.ErrorMessage = strings.Join(problems, "; ")
		return c.append(ctx, actor, expected, evs)
	})
	receipt.Result = res
	return receipt, err
}

// receiveTrace decides the events that one trace's new records cause: the
// records not stored yet, and the trace rebuilt from all of them when it has
// reviewable messages. A *domain.ValidationError rejects this trace's
// records.
func (c *Commands) receiveTrace(actor Actor, st traces.State, stream, traceID, hexID string, recs []formats.RawSpan, sourceID string) ([]events.New, error) {
	received := events.OTelSpansReceivedV1{TraceID: traceID, OTelTraceID: hexID}
	all := map[string]formats.RawSpan{}
	for id, raw := range st.OTelSpans {
		all[id] = formats.RawSpan{TraceID: hexID, SpanID: id, JSON: raw}
	}
	for _, r := range recs {
		if stored, ok := all[r.SpanID]; ok && traces.SameSpanJSON(stored.JSON, r.JSON) {
			continue // a re-sent record (exporter retry): nothing to store
		}
		if err := domain.CheckJSON("span "+r.SpanID, r.JSON); err != nil {
			return nil, err // stored as sent, so it must be safe as sent (domain/text.go)
		}
		all[r.SpanID] = r
		received.Spans = append(received.Spans, events.RawSpanRecord{SpanID: r.SpanID, JSON: r.JSON})
	}
	if len(received.Spans) == 0 {
		return nil, nil // every record of this trace was already stored as sent
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
		return nil, err
	}
	evs := []events.New{{ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: events.OTelSpansReceived, Payload: received}}
	if !hasLLM {
		return evs, nil
	}
	d, err := traces.DecideImport(st, traces.ImportInput{TraceID: traceID, Trace: t, Format: formats.OTel{}.Name(), ExplicitSourceID: sourceID, NewID: newID})
	if err != nil {
		return nil, err
	}
	if !d.NoOp {
		evs = append(evs, events.New{ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: d.Type, Payload: d.Payload})
		for _, rm := range d.Removals {
			evs = append(evs, events.New{ID: newID(), Stream: stream, OwnerID: actor.UserID, Type: events.AnnotationRemoved, Payload: rm})
		}
	}
	return evs, nil
}
