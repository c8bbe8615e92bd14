package formats

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/criticml/critic/domain"
)

// SpanMemo remembers what rebuilding a conversation derives from each of its
// stored records alone: the record decoded, and each LLM span's messages. The
// live receiver rebuilds a conversation from all of its records on every
// export, and an agent's every call re-sends the conversation so far, so
// without a memo each export decodes everything the run sent before it and
// a long run's exports slow down with the square of its length. A record is
// taken from the memo only while its JSON is byte for byte the one
// memoized; a span with log records joined to it is read afresh (the logs
// are its events too). The zero value is not usable: NewSpanMemo.
//
// A SpanMemo is not safe for concurrent use: the receiver keeps one per
// conversation and uses it under that conversation's lock.
type SpanMemo struct {
	records map[string]*memoRecord // by RawSpan.SpanID
	size    int
	// joined is the last rebuild's calls (their slots, in order) joined
	// into steps before finishSteps: a rebuild whose calls begin with the
	// same ones joins only the calls after them.
	joined *joinedCalls
}

// joinedCalls is what joinMore made of a sequence of memoized calls.
type joinedCalls struct {
	slots    []*callSlot
	steps    []domain.Step
	produced [][]int
}

// join is joinCalls for calls whose memo slots are slots, resumed from the
// last join when that was of the first of them (every call memoized, in
// the same order: a call's slot is its record as memoized, so the same
// slot is the same call).
func (m *SpanMemo) join(slots []*callSlot, calls []llmCall) ([]domain.Step, [][]int) {
	if m == nil || slices.Contains(slots, nil) {
		if m != nil {
			m.joined = nil
		}
		return joinCalls(calls)
	}
	var steps []domain.Step
	var produced [][]int
	done := 0
	if j := m.joined; j != nil && len(j.slots) <= len(slots) && slices.Equal(j.slots, slots[:len(j.slots)]) {
		// Clipped, so the calls after append to a copy and the kept
		// steps stay as they were for a rebuild that is not kept.
		steps, produced, done = slices.Clip(j.steps), slices.Clip(j.produced), len(j.slots)
	}
	more, prod := joinMore(steps, calls[done:])
	produced = append(produced, prod...)
	m.joined = &joinedCalls{slots: slices.Clone(slots), steps: more, produced: produced}
	return finishSteps(slices.Clone(more)), produced
}

// NewSpanMemo returns an empty memo.
func NewSpanMemo() *SpanMemo { return &SpanMemo{records: map[string]*memoRecord{}} }

// Size is the bytes of JSON of the records the memo holds, which bounds
// what it keeps decoded (a small multiple of it).
func (m *SpanMemo) Size() int { return m.size }

// memoRecord is one record decoded: its spans and logs with Seq counted
// from the record's start (seqs of them), so a rebuild renumbers them in
// its own arrival order.
type memoRecord struct {
	json  json.RawMessage
	spans []otelSpan
	logs  []otelEvent
	seqs  int
	used  bool
}

// spanCall is what buildOTelTrace reads from an LLM span alone. Memoized
// spans share one (otelSpan.call), filled on first use; the steps in it are
// never modified after (joinCalls and finishSteps copy before changing).
type spanCall struct {
	in, out   []domain.Step
	isLLM     bool
	unordered bool
}

// callSlot holds a memoized span's spanCall once computed.
type callSlot struct{ call *spanCall }

// add decodes rs into recs, through the memo when it has rs as it is.
func (m *SpanMemo) add(recs *otelRecords, rs RawSpan, prefix string) error {
	if m != nil {
		if e := m.records[rs.SpanID]; e != nil && bytes.Equal(e.json, rs.JSON) {
			// The caller's copy from now on: the receiver's is the one it
			// keeps (its folded stream), so the memo holds no second one.
			e.json, e.used = rs.JSON, true
			e.appendTo(recs)
			return nil
		}
	}
	var v any
	if err := decodeJSON(rs.JSON, &v); err != nil {
		return domain.AtLine(err, 0)
	}
	base, spans, logs := recs.seq, len(recs.spans), len(recs.logs)
	if err := recs.addRequest(v, 0, prefix); err != nil {
		return err
	}
	if m == nil {
		return nil
	}
	e := &memoRecord{json: rs.JSON, seqs: recs.seq - base, used: true}
	for i := spans; i < len(recs.spans); i++ {
		recs.spans[i].call = &callSlot{}
		e.spans = append(e.spans, shiftSeq(recs.spans[i], -base))
	}
	for _, l := range recs.logs[logs:] {
		l.Seq -= base
		e.logs = append(e.logs, l)
	}
	if old := m.records[rs.SpanID]; old != nil {
		m.size -= len(old.json)
	}
	m.records[rs.SpanID] = e
	m.size += len(rs.JSON)
	return nil
}

// appendTo adds the record's spans and logs to recs as decoding it there
// would have: numbered from recs's next arrival. Each span gets its own
// copy of its events, since buildOTelTrace joins log records to them.
func (e *memoRecord) appendTo(recs *otelRecords) {
	base := recs.seq
	for _, s := range e.spans {
		recs.spans = append(recs.spans, shiftSeq(s, base))
	}
	for _, l := range e.logs {
		l.Seq += base
		recs.logs = append(recs.logs, l)
	}
	recs.seq += e.seqs
}

// shiftSeq is s with its and its events' Seq moved by d, on its own copy of
// its events.
func shiftSeq(s otelSpan, d int) otelSpan {
	s.Seq += d
	s.Events = slices.Clone(s.Events)
	for j := range s.Events {
		s.Events[j].Seq += d
	}
	return s
}

// sweep drops the records the last rebuild did not read (replaced or gone)
// and clears the marks for the next.
func (m *SpanMemo) sweep() {
	if m == nil {
		return
	}
	for id, e := range m.records {
		if !e.used {
			m.size -= len(e.json)
			delete(m.records, id)
			continue
		}
		e.used = false
	}
}

// callOf reads the span's LLM call: its input and output messages, in the
// conventions buildOTelTrace knows, through the span's memo slot when it
// has one.
func (s otelSpan) callOf() (spanCall, error) {
	if s.call != nil && s.call.call != nil {
		return *s.call.call, nil
	}
	if err := checkGenAIMessagesJSON(s); err != nil {
		return spanCall{}, err
	}
	in, out, isLLM := otelCallMessages(s.Attrs, s.Events)
	c := spanCall{isLLM: isLLM && len(in)+len(out) > 0}
	if c.isLLM {
		c.in = keepToolKeyOrder(in, s.Attrs, s.Events)
		c.out = withCallMetadata(out, otelCallMetadata(s.Attrs))
		c.unordered = tiedMessageEvents(s.Events)
	}
	if s.call != nil {
		s.call.call = &c
	}
	return c, nil
}
