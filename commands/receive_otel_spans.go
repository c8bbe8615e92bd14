package commands

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
// Client-only instrumentation sends one OTel trace per LLM call: such calls
// are filed into one conversation's stream instead (by session id, or the
// conversation their input extends; formats.ThreadOf), the decision recorded
// in the events so that a replay needs no deciding.
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
// exports of one trace all apply; see retryContended. Between exports the
// process keeps the conversations it wrote lately (liveConversations), so an
// export reads, decodes and joins only what is new. A trace that was erased
// is not stored again: its records are rejected alone (traces.ErasedMessage).
type ReceiveOTelSpans struct {
	Actor    Actor
	Spans    []formats.RawSpan
	SourceID string
}

// ReceiveOTelSpansHandler runs ReceiveOTelSpans.
type ReceiveOTelSpansHandler struct{ *Streams }

func (c ReceiveOTelSpansHandler) Handle(ctx context.Context, cmd ReceiveOTelSpans) (OTelReceipt, error) {
	byTrace := map[string][]formats.RawSpan{}
	var order []string
	for _, r := range cmd.Spans {
		if _, ok := byTrace[r.TraceID]; !ok {
			order = append(order, r.TraceID)
		}
		byTrace[r.TraceID] = append(byTrace[r.TraceID], r)
	}
	// Where each OTel trace may go is read from its content before the
	// lock, so every stream a decision can touch is locked and loaded.
	threads := map[string]formats.Thread{}
	var streams []string
	for _, hexID := range order {
		th := formats.ThreadOf(byTrace[hexID])
		threads[hexID] = th
		streams = append(streams, events.TraceStream(TraceIDFor(cmd.Actor.UserID, hexID)))
		if key := conversationKey(th); key != "" {
			streams = append(streams, events.TraceStream(TraceIDFor(cmd.Actor.UserID, key)))
		}
	}
	// Earlier calls first, so a batch holding several calls of one
	// conversation files them in the order they happened.
	sort.SliceStable(order, func(i, j int) bool { return threads[order[i]].Start() < threads[order[j]].Start() })
	for {
		receipt, err := c.receiveOTel(ctx, cmd.Actor, order, byTrace, threads, streams, cmd.SourceID)
		var more errFiledElsewhere
		if !errors.As(err, &more) {
			return receipt, err
		}
		// A trace filed earlier into a conversation its content no longer
		// names (a re-sent span that changed): lock that one too.
		streams = append(streams, events.TraceStream(TraceIDFor(cmd.Actor.UserID, string(more))))
	}
}

// errFiledElsewhere names a conversation key a trace's own stream points to
// that the attempt had not locked.
type errFiledElsewhere string

func (e errFiledElsewhere) Error() string { return "filed in " + string(e) }

func (c *Streams) receiveOTel(ctx context.Context, actor Actor, order []string, byTrace map[string][]formats.RawSpan, threads map[string]formats.Thread, streams []string, sourceID string) (OTelReceipt, error) {
	unlock := c.locks.lock(streams)
	defer unlock()
	locked := map[string]bool{}
	var unique []string
	for _, s := range streams {
		if !locked[s] {
			unique = append(unique, s)
		}
		locked[s] = true
	}
	// What is kept of the streams is theirs while they are locked.
	known := map[string]*liveConversation{}
	again := map[string]bool{}
	for _, s := range unique {
		lc, seen := c.live.take(s)
		if lc != nil {
			known[s] = lc
		}
		again[s] = seen
	}
	defer func() {
		for s, lc := range known {
			c.live.put(s, lc, again[s])
		}
	}()

	var receipt OTelReceipt
	res, err := retryContended(ctx, func() (Result, error) {
		receipt = OTelReceipt{}
		var problems []string
		tails, err := c.liveTails(ctx, unique, known)
		if err != nil {
			return Result{}, err
		}
		convs := map[string]*otelConversation{}
		var convOrder []string
		open := func(key string) (*otelConversation, error) {
			traceID := TraceIDFor(actor.UserID, key)
			stream := events.TraceStream(traceID)
			if cv := convs[stream]; cv != nil {
				return cv, nil
			}
			lc, err := advance(known, stream, traceID, tails[stream])
			if err != nil {
				return nil, err
			}
			st := lc.st
			cv := &otelConversation{stream: stream, traceID: traceID, st: st, memo: lc.memo, external: st.ExternalID, all: map[string]formats.RawSpan{}, hexID: key}
			for id, raw := range st.OTelSpans {
				cv.all[id] = formats.RawSpan{SpanID: id, JSON: raw}
			}
			convs[stream] = cv
			convOrder = append(convOrder, stream)
			return cv, nil
		}
		reject := func(hexID string, err error) {
			for _, r := range byTrace[hexID] {
				if r.IsLog() {
					receipt.RejectedLogs++
				} else {
					receipt.RejectedSpans++
				}
			}
			problems = append(problems, fmt.Sprintf("trace %s: %s", hexID, err.Error()))
		}
		for _, hexID := range order {
			own, err := open(hexID)
			if err != nil {
				return Result{}, err
			}
			cv, filed, err := fileOTelTrace(own, open, threads[hexID])
			if err != nil {
				return Result{}, err
			}
			if !locked[cv.stream] {
				return Result{}, errFiledElsewhere(own.st.OTelFiledIn)
			}
			if cv.st.Erased {
				reject(hexID, errors.New(traces.ErasedMessage(cv.traceID)))
				continue
			}
			added, err := cv.add(hexID, byTrace[hexID])
			if v, ok := errors.AsType[*domain.ValidationError](err); ok {
				reject(hexID, v)
				continue
			}
			if err != nil {
				return Result{}, err
			}
			if added && filed != "" {
				own.filedIn, own.filedHex = filed, hexID
			}
		}
		expected := map[string]int64{}
		var evs []events.New
		for _, stream := range convOrder {
			cv := convs[stream]
			tevs, err := cv.decide(actor, sourceID)
			if v, ok := errors.AsType[*domain.ValidationError](err); ok {
				for _, hexID := range cv.otelIDs {
					reject(hexID, v)
				}
				continue
			}
			if err != nil {
				return Result{}, err
			}
			if len(tevs) > 0 {
				expected[stream] = cv.st.Version
				evs = append(evs, tevs...)
			}
		}
		receipt.ErrorMessage = strings.Join(problems, "; ")
		return c.append(ctx, actor, expected, evs)
	})
	receipt.Result = res
	return receipt, err
}

// conversationKey is the external id under which a thread's conversation
// stream is keyed ("" when its content names none): "session:<id>" for a
// named conversation, "otel-opening:<hash>" for a rootless call.
func conversationKey(th formats.Thread) string {
	switch {
	case th.Conversation != "":
		return "session:" + th.Conversation
	case th.Opening != "":
		return "otel-opening:" + th.Opening
	}
	return ""
}

// fileOTelTrace decides which conversation an OTel trace's records go to
// (formats.ThreadOf says why): the conversation the trace was filed into
// before, the trace's own stream once it has records, the named
// conversation, the conversation its rootless call continues, or its own.
// filed is the conversation's key when this is the trace's first filing
// into a conversation other than its own (recorded in its own stream, so
// its later records follow whatever they hold).
func fileOTelTrace(own *otelConversation, open func(key string) (*otelConversation, error), th formats.Thread) (cv *otelConversation, filed string, err error) {
	if key := own.st.OTelFiledIn; key != "" {
		cv, err := open(key)
		if err != nil {
			return nil, "", err
		}
		return cv.named(key, th, own.hexID), "", nil
	}
	if own.st.Version > 0 || len(own.new) > 0 {
		return own, "", nil
	}
	hexID := own.hexID
	key := conversationKey(th)
	if key == "" {
		return own, "", nil
	}
	if cv, err = open(key); err != nil {
		return nil, "", err
	}
	if cv.st.Erased && th.Conversation == "" {
		// Only an opening matched the erased conversation: a run of its
		// own, not that conversation continued.
		return own, "", nil
	}
	if th.Conversation != "" || len(cv.all) == 0 {
		return cv.named(key, th, hexID), key, nil
	}
	stored, err := formats.ConversationOf(cv.records(), cv.external, cv.memo)
	if err != nil || !th.Continues(stored) {
		return own, "", nil // not this conversation: a conversation of its own
	}
	return cv.named(key, th, hexID), key, nil
}

// otelConversation is one trace stream the request writes: the records it
// holds (stored and new) and the spans-received events adding to it.
type otelConversation struct {
	stream, traceID string
	// external is the trace's external id: the OTel trace id for a trace
	// of its own, "session:<id>" or the first call's trace id for a joined
	// conversation.
	external string
	joined   bool
	st       traces.State
	// memo is the conversation's records decoded (liveConversations).
	memo    *formats.SpanMemo
	all     map[string]formats.RawSpan
	new     []events.OTelSpansReceivedV1
	otelIDs []string
	trace   domain.Trace
	hasLLM  bool
	// hexID is the OTel trace id when this is an OTel trace's own stream;
	// filedIn, set there, records its first filing into the conversation
	// keyed so (filedHex being its OTel trace id).
	hexID, filedIn, filedHex string
}

// named marks the conversation as joined and gives a new one its external
// id: the session's, or the first call's OTel trace id.
func (cv *otelConversation) named(key string, th formats.Thread, hexID string) *otelConversation {
	cv.joined = true
	if cv.external == "" {
		cv.external = hexID
		if th.Conversation != "" {
			cv.external = key
		}
	}
	return cv
}

func (cv *otelConversation) records() []formats.RawSpan {
	ids := slices.Sorted(maps.Keys(cv.all))
	out := make([]formats.RawSpan, len(ids))
	for j, id := range ids {
		out[j] = cv.all[id]
	}
	return out
}

// add files one OTel trace's records into the conversation: the records not
// stored yet, kept only if the conversation still builds with them (a
// *domain.ValidationError rejects this trace's records alone).
func (cv *otelConversation) add(hexID string, recs []formats.RawSpan) (added bool, err error) {
	cv.external = cmp.Or(cv.external, hexID)
	received := events.OTelSpansReceivedV1{TraceID: cv.traceID, OTelTraceID: hexID}
	if cv.joined {
		received.Conversation = cv.external
	}
	trial := make(map[string]formats.RawSpan, len(cv.all)+len(recs))
	maps.Copy(trial, cv.all)
	for _, r := range recs {
		if stored, ok := trial[r.SpanID]; ok && traces.SameSpanJSON(stored.JSON, r.JSON) {
			continue // a re-sent record (exporter retry): nothing to store
		}
		if err := domain.CheckJSON("span "+r.SpanID, r.JSON); err != nil {
			return false, err // stored as sent, so it must be safe as sent (domain/text.go)
		}
		trial[r.SpanID] = r
		received.Spans = append(received.Spans, events.RawSpanRecord{SpanID: r.SpanID, JSON: r.JSON})
	}
	if len(received.Spans) == 0 {
		return false, nil // every record of this trace was already stored as sent
	}
	prev := cv.all
	cv.all = trial
	t, hasLLM, err := formats.RebuildConversation(cv.records(), cv.external, cv.built(received), cv.memo)
	if err != nil {
		cv.all = prev
		return false, err
	}
	cv.trace, cv.hasLLM = t, hasLLM
	cv.new = append(cv.new, received)
	cv.otelIDs = append(cv.otelIDs, hexID)
	return true, nil
}

// decide returns the events the conversation's new records cause: the
// records, and the trace rebuilt from all of them decided as a re-import
// when it has reviewable messages.
func (cv *otelConversation) decide(actor Actor, sourceID string) ([]events.New, error) {
	var evs []events.New
	if cv.filedIn != "" {
		evs = append(evs, events.New{ID: newID(), Stream: cv.stream, OwnerID: actor.UserID, Type: events.OTelSpansReceived,
			Payload: events.OTelSpansReceivedV1{TraceID: cv.traceID, OTelTraceID: cv.filedHex, FiledIn: cv.filedIn}})
	}
	if len(cv.new) == 0 {
		return evs, nil
	}
	for _, p := range cv.new {
		evs = append(evs, events.New{ID: newID(), Stream: cv.stream, OwnerID: actor.UserID, Type: events.OTelSpansReceived, Payload: p})
	}
	if !cv.hasLLM {
		return evs, nil
	}
	d, err := traces.DecideImport(cv.st, traces.ImportInput{TraceID: cv.traceID, Trace: cv.trace, Format: formats.OTel{}.Name(), ExplicitSourceID: sourceID, NewID: newID})
	if err != nil {
		return nil, err
	}
	if !d.NoOp {
		evs = append(evs, events.New{ID: newID(), Stream: cv.stream, OwnerID: actor.UserID, Type: d.Type, Payload: d.Payload})
		for _, rm := range d.Removals {
			evs = append(evs, events.New{ID: newID(), Stream: cv.stream, OwnerID: actor.UserID, Type: events.AnnotationRemoved, Payload: rm})
		}
	}
	return evs, nil
}

// built is the input and output of each stored span whose raw span is the
// one the stored tree was built from: not received in this request (before
// or now) and not stored since the last revision. The rebuild takes them
// as they are (formats.RebuildConversation), so the decision compares them
// as bytes too — the rebuilt copy (re-encoded) and the stored one (as
// PostgreSQL's jsonb writes it back) differ in form, and comparing them as
// JSON values cost a decode of every span's conversation on every request.
func (cv *otelConversation) built(now events.OTelSpansReceivedV1) map[string]formats.SpanIO {
	fresh := map[string]bool{}
	for _, r := range now.Spans {
		fresh[r.SpanID] = true
	}
	for _, p := range cv.new {
		for _, r := range p.Spans {
			fresh[r.SpanID] = true
		}
	}
	out := make(map[string]formats.SpanIO, len(cv.st.Spans))
	for _, sp := range cv.st.Spans {
		if !fresh[sp.ID] && !cv.st.OTelUnbuilt[sp.ID] {
			out[sp.ID] = formats.SpanIO{Input: sp.Input, Output: sp.Output}
		}
	}
	return out
}
