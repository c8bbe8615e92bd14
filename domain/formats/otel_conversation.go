package formats

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/criticml/critic/domain"
)

// Client-only instrumentation (the OpenInference and OpenLLMetry
// quick-starts: no span around the agent's loop) exports every LLM call as
// an OTel trace of its own, each re-sending the history. The live receiver
// joins such calls into one conversation, deciding from content alone:
//
//   - A rootless trace (every span parentless: no span around the calls)
//     holding an LLM call whose spans, log records or resource carry
//     gen_ai.conversation.id or session.id belongs to that conversation.
//   - Otherwise a rootless call (the trace is one parentless LLM span) is
//     filed under its opening: its service and the conversation's messages
//     up to and including the first assistant message. Every later call of
//     the same conversation re-sends that opening, so it computes the same
//     key. It joins the conversation already filed there only when its
//     input strictly extends that conversation's messages (or, arriving
//     late, its messages are a prefix of them) and it started at most
//     ConversationWindow after the conversation's last call ended; any
//     other call is a conversation of its own.
//
// The receiver records the decision in the event log (the spans-received
// event is appended to the joined conversation's stream and names it), so a
// replay rebuilds the same traces without deciding again.

// ConversationWindow is how long after a conversation's last call a rootless
// call may still join it.
const ConversationWindow = 30 * time.Minute

// Thread is where one OTel trace's records belong, as far as their content
// says.
type Thread struct {
	// Conversation is the trace's gen_ai.conversation.id or session.id,
	// "" when it names none.
	Conversation string
	// Opening is set for a rootless LLM call: a hash of its service and the
	// conversation's messages through the first assistant message.
	Opening string

	input, messages []domain.Step // the call's input; input then output
	start           int64
}

// Conversation is a stored conversation as a rootless call is compared with
// it: its messages and when its last call ended.
type Conversation struct {
	steps []domain.Step
	end   int64
}

// ThreadOf reads where one OTel trace's records (all of one trace id)
// belong. Records that do not decode give the zero Thread: they stay in
// their own trace, whose rebuild reports the error.
func ThreadOf(recs []RawSpan) Thread {
	// Spans first, each checked as it is decoded, so a rooted trace (the
	// common case) costs one span's decoding here, and logs-only records
	// none.
	var r otelRecords
	sorted := make([]RawSpan, 0, len(recs))
	for _, rs := range recs {
		if !rs.IsLog() {
			sorted = append(sorted, rs)
		}
	}
	if len(sorted) == 0 {
		return Thread{}
	}
	for _, rs := range recs {
		if rs.IsLog() {
			sorted = append(sorted, rs)
		}
	}
	for _, rs := range sorted {
		var v any
		if decodeJSON(rs.JSON, &v) != nil || r.addRequest(v, 0, "") != nil {
			return Thread{}
		}
		if n := len(r.spans); !rs.IsLog() && n > 0 && r.spans[n-1].ParentID != "" {
			return Thread{}
		}
	}
	return threadOf(r.spans, r.logs)
}

// threadOf is ThreadOf over decoded records: the live receiver's records of
// one trace id, or one trace id's records of an imported file.
func threadOf(spans []otelSpan, logs []otelEvent) Thread {
	r := otelRecords{spans: spans, logs: logs}
	var th Thread
	// Only traces without a root span around their calls (every span its
	// own root) are joined: a rooted trace is one conversation already, and
	// its spans arrive in several requests (children first), so filing it by
	// an attribute only some of them carry would split it.
	if len(r.spans) == 0 || slices.ContainsFunc(r.spans, func(s otelSpan) bool { return s.ParentID != "" }) {
		return th
	}
	// ... and only traces holding an LLM call: a rooted trace's root span
	// (an agent span naming the session) can arrive alone, before or after
	// its children, and must stay with them.
	if !slices.ContainsFunc(r.spans, func(s otelSpan) bool {
		in, out, isLLM := otelCallMessages(s.Attrs, s.Events)
		return isLLM && len(in)+len(out) > 0
	}) {
		return th
	}
	for _, s := range r.spans {
		if id := conversationAttr(s.Attrs, s.Resource); id != "" {
			th.Conversation = id
			return th
		}
	}
	for _, l := range r.logs {
		if id := conversationAttr(l.Attrs, nil); id != "" {
			th.Conversation = id
			return th
		}
	}
	if len(r.logs) > 0 || len(r.spans) != 1 {
		return th
	}
	s := r.spans[0]
	in, out, isLLM := otelCallMessages(s.Attrs, s.Events)
	if !isLLM || len(in) == 0 {
		return th
	}
	out = outputAfterInput(in, out)
	th.input = withoutReasoning(in)
	th.messages = append(append([]domain.Step(nil), th.input...), withoutReasoning(out)...)
	th.start = s.Start
	first := slices.IndexFunc(th.messages, func(m domain.Step) bool { return m.Role == domain.RoleAssistant })
	if first < 0 {
		return th // no answer yet: nothing a later call could be matched on
	}
	h := sha256.New()
	h.Write([]byte(anyString(s.Resource["service.name"])))
	for _, m := range th.messages[:first+1] {
		ti, _ := json.Marshal(m.ToolInput)
		for _, part := range []string{string(m.Role), strings.TrimSpace(m.Content), m.ToolCallID, m.ToolName, string(ti)} {
			h.Write([]byte{0})
			h.Write([]byte(part))
		}
	}
	th.Opening = hex.EncodeToString(h.Sum(nil))
	return th
}

// conversationAttr is the conversation id a span, log record or resource
// names: gen_ai.conversation.id (GenAI conventions), else session.id
// (OpenInference, Langfuse, OpenLLMetry's association properties).
func conversationAttr(attrs, resource map[string]any) string {
	for _, m := range []map[string]any{attrs, resource} {
		for _, k := range []string{"gen_ai.conversation.id", "session.id", "langfuse.session.id", "traceloop.association.properties.session_id"} {
			if id := strings.TrimSpace(anyString(m[k])); id != "" {
				return id
			}
		}
	}
	return ""
}

// ConversationOf reads a stored conversation from its records (memo as for
// RebuildConversation).
func ConversationOf(recs []RawSpan, externalID string, memo *SpanMemo) (Conversation, error) {
	t, _, err := RebuildConversation(recs, externalID, nil, memo)
	if err != nil {
		return Conversation{}, err
	}
	return conversationOfTrace(t), nil
}

func conversationOfTrace(t domain.Trace) Conversation {
	c := Conversation{steps: withoutReasoning(t.Steps)}
	for _, sp := range t.Spans {
		c.end = max(c.end, sp.EndNs)
	}
	return c
}

// otelGroup is one conversation of an imported file: its external id and
// the OTel trace ids whose records it is rebuilt from.
type otelGroup struct {
	id   string
	tids []string
}

// joinRootless groups an imported file's OTel traces as the live receiver
// files them (the rules above): rootless calls naming one session form one
// conversation, and a rootless call that continues an earlier call's
// conversation joins it. Every other trace is a conversation of its own. The
// same file therefore gives the same traces as the same records sent live.
func joinRootless(r *otelRecords) ([]otelGroup, error) {
	var groups []otelGroup
	bySession := map[string]int{}
	byOpening := map[string][]int{}
traces:
	for _, tid := range r.traceOrder() {
		th := threadOf(r.spansOf(tid), r.logsOf(tid))
		switch {
		case th.Conversation != "":
			if gi, ok := bySession[th.Conversation]; ok {
				groups[gi].tids = append(groups[gi].tids, tid)
				continue
			}
			bySession[th.Conversation] = len(groups)
			groups = append(groups, otelGroup{id: "session:" + th.Conversation, tids: []string{tid}})
			continue
		case th.Opening != "":
			for _, gi := range byOpening[th.Opening] {
				t, ok, err := r.build(groups[gi].id, groups[gi].tids, nil, nil)
				if err != nil {
					return nil, err
				}
				if ok && th.Continues(conversationOfTrace(t)) {
					groups[gi].tids = append(groups[gi].tids, tid)
					continue traces
				}
			}
			byOpening[th.Opening] = append(byOpening[th.Opening], len(groups))
		}
		groups = append(groups, otelGroup{id: tid, tids: []string{tid}})
	}
	return groups, nil
}

// Continues says whether a rootless call joins the stored conversation c:
// its input strictly extends c's messages, or (an earlier call arriving
// late) its input and output are a prefix of them; and it started at most
// ConversationWindow after c's last call ended.
func (th Thread) Continues(c Conversation) bool {
	if th.start-c.end > int64(ConversationWindow) {
		return false
	}
	if len(th.input) > len(c.steps) && stepsPrefix(c.steps, th.input) {
		return true
	}
	return len(th.messages) <= len(c.steps) && stepsPrefix(th.messages, c.steps)
}

// stepsPrefix says whether a is a prefix of b, message by message.
func stepsPrefix(a, b []domain.Step) bool {
	return len(a) <= len(b) && slices.EqualFunc(a, b[:len(a)], sameStep)
}

// Start is when the trace's rootless call started (0 for other traces).
func (th Thread) Start() int64 { return th.start }

// build rebuilds one conversation, whose external id is id, from the
// records of all its OTel traces tids (buildOTelTrace says what built and
// memo are).
func (r *otelRecords) build(id string, tids []string, built map[string]SpanIO, memo *SpanMemo) (domain.Trace, bool, error) {
	var spans []otelSpan
	var logs []otelEvent
	for _, tid := range tids {
		spans = append(spans, r.spansOf(tid)...)
		logs = append(logs, r.logsOf(tid)...)
	}
	return buildOTelTrace(id, spans, logs, built, memo)
}
