package formats

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/criticml/critic/domain"
)

// keepToolKeyOrder gives back tool results recorded as JSON objects with
// their keys in the order the SDK recorded them. The conventions are read
// by decoding attributes into map[string]any, which forgets key order, so a
// tool step's JSON content comes out with sorted keys; here the span's
// attributes and events are scanned for the same value as written (compact,
// its own key order) and that text replaces the re-marshaled one. Only tool
// steps whose content is a JSON object or array are touched, so spans
// without such results cost nothing more.
func keepToolKeyOrder(steps []domain.Step, attrs map[string]any, events []otelEvent) []domain.Step {
	if !slices.ContainsFunc(steps, func(s domain.Step) bool { return s.Role == domain.RoleTool && jsonContainer(s.Content) }) {
		return steps
	}
	ordered := map[string]string{}
	var scan func(v any)
	scan = func(v any) {
		switch x := v.(type) {
		case string:
			if jsonContainer(x) {
				collectOrderedJSON([]byte(x), ordered, 0)
			}
		case map[string]any:
			for _, c := range x {
				scan(c)
			}
		case []any:
			for _, c := range x {
				scan(c)
			}
		}
	}
	scan(attrs)
	for _, e := range events {
		scan(e.Attrs)
		scan(e.Body)
	}
	if len(ordered) == 0 {
		return steps
	}
	out := append([]domain.Step(nil), steps...)
	for i, s := range out {
		if o, ok := ordered[s.Content]; ok && s.Role == domain.RoleTool {
			out[i].Content = o
		}
	}
	return out
}

func jsonContainer(s string) bool {
	t := strings.TrimSpace(s)
	return t != "" && (t[0] == '{' || t[0] == '[')
}

// collectOrderedJSON maps the re-marshaled (sorted-key) text of every object
// or array inside raw, at any depth and inside JSON strings that hold JSON,
// to its compact text as written. raw must be one JSON value; anything else
// adds nothing.
//
// It reads raw once, building each container's re-marshaled and compact
// text from its children's: decoding, re-marshaling and compacting every
// container again at each level made it the larger part of rebuilding an
// OTel trace (a GenAI span's message history is several levels deep), and
// the receiver rebuilds every touched trace on each export. The scan is
// its own (json.Decoder's tokens cost as much again); what it accepts and
// records is checked against decoding each level (FuzzOrderedJSONWalk).
func collectOrderedJSON(raw []byte, into map[string]string, depth int) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || depth > maxOrderDepth || (raw[0] != '{' && raw[0] != '[' && raw[0] != '"') {
		return
	}
	w := orderWalker{raw: raw, found: map[string]string{}}
	if _, _, ok := w.value(depth, 0); !ok {
		return
	}
	if w.skipSpace(); w.pos != len(raw) {
		return // data after the value: not one JSON value
	}
	maps.Copy(into, w.found)
}

// maxOrderDepth is how deep collectOrderedJSON records containers (levels
// and JSON held in strings together); maxNesting is where encoding/json
// stops decoding.
const (
	maxOrderDepth = 32
	maxNesting    = 10000
)

// orderWalker is one pass of collectOrderedJSON over raw; found collects
// what a successful pass adds.
type orderWalker struct {
	raw   []byte
	pos   int
	found map[string]string
}

func (w *orderWalker) skipSpace() {
	for w.pos < len(w.raw) {
		switch w.raw[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// value reads the value at pos (depth counts levels and JSON in strings,
// nesting only levels): its text as json.Marshal writes the value decoded
// (object keys sorted, strings re-escaped, numbers as written) and its
// compact text as written. ok is false for anything that is not JSON.
func (w *orderWalker) value(depth, nesting int) (canon, compact string, ok bool) {
	w.skipSpace()
	if w.pos >= len(w.raw) {
		return "", "", false
	}
	switch c := w.raw[w.pos]; {
	case c == '{' || c == '[':
		if nesting >= maxNesting {
			return "", "", false
		}
		w.pos++
		if c == '{' {
			canon, compact, ok = w.object(depth, nesting)
		} else {
			canon, compact, ok = w.array(depth, nesting)
		}
		if ok && depth <= maxOrderDepth && canon != compact {
			w.found[canon] = compact
		}
		return canon, compact, ok
	case c == '"':
		text, s, canon, ok := w.str()
		if !ok {
			return "", "", false
		}
		if jsonContainer(s) {
			collectOrderedJSON([]byte(s), w.found, depth+1)
		}
		return canon, text, true
	case c == '-' || (c >= '0' && c <= '9'):
		text, ok := w.number()
		return text, text, ok
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(w.raw[w.pos:], []byte(lit)) {
			w.pos += len(lit)
			return lit, lit, true
		}
	}
	return "", "", false
}

// str reads the string at pos: its text as written, its value, and its
// text as json.Marshal writes the value.
func (w *orderWalker) str() (text, value, canon string, ok bool) {
	start := w.pos
	w.pos++
	for ; w.pos < len(w.raw); w.pos++ {
		switch w.raw[w.pos] {
		case '\\':
			w.pos++ // the escaped byte cannot end the string
		case '"':
			w.pos++
			text = string(w.raw[start:w.pos])
			if plainString(text) { // no escape, nothing to re-escape
				return text, text[1 : len(text)-1], text, true
			}
			if json.Unmarshal(w.raw[start:w.pos], &value) != nil {
				return "", "", "", false
			}
			canon, _ := json.Marshal(value)
			return text, value, string(canon), true
		}
	}
	return "", "", "", false
}

// plainString: a string literal json.Marshal writes back byte for byte —
// printable ASCII, no escape, nothing it escapes for HTML.
func plainString(text string) bool {
	for i := 1; i < len(text)-1; i++ {
		switch c := text[i]; {
		case c < 0x20 || c > 0x7e, c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// number reads the number at pos, as JSON's grammar has it.
func (w *orderWalker) number() (string, bool) {
	start, b := w.pos, w.raw
	digits := func() int {
		n := 0
		for w.pos < len(b) && b[w.pos] >= '0' && b[w.pos] <= '9' {
			w.pos++
			n++
		}
		return n
	}
	if b[w.pos] == '-' {
		w.pos++
	}
	switch {
	case w.pos < len(b) && b[w.pos] == '0':
		w.pos++
	case digits() == 0:
		return "", false
	}
	if w.pos < len(b) && b[w.pos] == '.' {
		w.pos++
		if digits() == 0 {
			return "", false
		}
	}
	if w.pos < len(b) && (b[w.pos] == 'e' || b[w.pos] == 'E') {
		w.pos++
		if w.pos < len(b) && (b[w.pos] == '+' || b[w.pos] == '-') {
			w.pos++
		}
		if digits() == 0 {
			return "", false
		}
	}
	return string(b[start:w.pos]), true
}

// next skips space and reports whether the byte there is c (and steps past it).
func (w *orderWalker) next(c byte) bool {
	w.skipSpace()
	if w.pos < len(w.raw) && w.raw[w.pos] == c {
		w.pos++
		return true
	}
	return false
}

// elements reads the elements of the object or array opened before pos,
// up to close, with read (n counts them from 0), and reports whether they
// were well formed.
func (w *orderWalker) elements(close byte, read func(n int) bool) bool {
	if w.next(close) {
		return true
	}
	for n := 0; ; n++ {
		if !read(n) {
			return false
		}
		if w.next(close) {
			return true
		}
		if !w.next(',') {
			return false
		}
	}
}

func (w *orderWalker) object(depth, nesting int) (canon, compact string, ok bool) {
	var c strings.Builder
	c.WriteByte('{')
	type entry struct{ key, value string } // both as json.Marshal writes them
	values := map[string]entry{}           // a repeated key keeps its last value, as decoding does
	ok = w.elements('}', func(n int) bool {
		if w.skipSpace(); w.pos >= len(w.raw) || w.raw[w.pos] != '"' {
			return false
		}
		keyText, key, keyCanon, ok := w.str()
		if !ok || !w.next(':') {
			return false
		}
		vc, vcompact, ok := w.value(depth+1, nesting+1)
		if !ok {
			return false
		}
		values[key] = entry{keyCanon, vc}
		if n > 0 {
			c.WriteByte(',')
		}
		c.WriteString(keyText)
		c.WriteByte(':')
		c.WriteString(vcompact)
		return true
	})
	if !ok {
		return "", "", false
	}
	c.WriteByte('}')
	var m strings.Builder
	m.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(values)) {
		if i > 0 {
			m.WriteByte(',')
		}
		m.WriteString(values[k].key)
		m.WriteByte(':')
		m.WriteString(values[k].value)
	}
	m.WriteByte('}')
	return m.String(), c.String(), true
}

func (w *orderWalker) array(depth, nesting int) (canon, compact string, ok bool) {
	var m, c strings.Builder
	m.WriteByte('[')
	c.WriteByte('[')
	ok = w.elements(']', func(n int) bool {
		vc, vcompact, ok := w.value(depth+1, nesting+1)
		if !ok {
			return false
		}
		if n > 0 {
			m.WriteByte(',')
			c.WriteByte(',')
		}
		m.WriteString(vc)
		c.WriteString(vcompact)
		return true
	})
	if !ok {
		return "", "", false
	}
	m.WriteByte(']')
	c.WriteByte(']')
	return m.String(), c.String(), true
}

// orderGenAIEvents puts the per-message events of one call in conversation
// order. They are ordered by time, then arrival; but an SDK exporting each
// log record in its own request (SimpleLogRecordProcessor) stamps the whole
// history with one millisecond and the requests race, so arrival says
// nothing. When that order is impossible for a conversation (a system
// message after another message, a tool result before any assistant
// message, a choice before the input), records of equal time are put in
// role order instead: system, user, assistant, each tool result right after
// the assistant message that called it, then the choice. A pure function of
// the records, so replay rebuilds the same steps.
func orderGenAIEvents(events []otelEvent) []otelEvent {
	sorted := append([]otelEvent(nil), events...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Time != sorted[j].Time && sorted[i].Time != 0 && sorted[j].Time != 0 {
			return sorted[i].Time < sorted[j].Time
		}
		return sorted[i].Seq < sorted[j].Seq
	})
	if plausibleEventOrder(sorted) {
		return sorted
	}
	rank := map[string]int{"gen_ai.system.message": 0, "gen_ai.user.message": 1, "gen_ai.assistant.message": 2, "gen_ai.tool.message": 3, "gen_ai.choice": 4}
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Time != sorted[j].Time {
			return sorted[i].Time < sorted[j].Time
		}
		return rank[sorted[i].Name] < rank[sorted[j].Name]
	})
	// Each tool result directly after the assistant message naming its id.
	var tools []otelEvent
	var rest []otelEvent
	for _, e := range sorted {
		if e.Name == "gen_ai.tool.message" && eventToolCallID(e) != "" {
			tools = append(tools, e)
		} else {
			rest = append(rest, e)
		}
	}
	placed := make([]bool, len(tools))
	out := make([]otelEvent, 0, len(sorted))
	for _, e := range rest {
		if e.Name == "gen_ai.choice" {
			for k, t := range tools {
				if !placed[k] {
					out, placed[k] = append(out, t), true
				}
			}
		}
		out = append(out, e)
		if e.Name != "gen_ai.assistant.message" {
			continue
		}
		raw, _ := json.Marshal(e.Body)
		for k, t := range tools {
			if !placed[k] && bytes.Contains(raw, []byte(`"`+eventToolCallID(t)+`"`)) {
				out, placed[k] = append(out, t), true
			}
		}
	}
	for k, t := range tools {
		if !placed[k] {
			out = append(out, t)
		}
	}
	return out
}

func eventToolCallID(e otelEvent) string {
	if b, ok := e.Body.(map[string]any); ok {
		return firstString(b["tool_call_id"], b["id"])
	}
	return ""
}

func plausibleEventOrder(events []otelEvent) bool {
	seenOther, seenAssistant, seenChoice := false, false, false
	for _, e := range events {
		switch e.Name {
		case "gen_ai.system.message":
			if seenOther {
				return false
			}
		case "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message":
			if seenChoice || (e.Name == "gen_ai.tool.message" && !seenAssistant) {
				return false
			}
			seenOther = true
			seenAssistant = seenAssistant || e.Name == "gen_ai.assistant.message"
		case "gen_ai.choice":
			seenChoice = true
		}
	}
	return true
}

// tiedMessageEvents says whether two or more of a call's per-message events
// carry the same time: their order is then unknown (see orderGenAIEvents),
// and joinCalls aligns the call's input to the conversation it re-sends.
func tiedMessageEvents(events []otelEvent) bool {
	seen := map[int64]bool{}
	for _, e := range events {
		switch e.Name {
		case "gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message":
			if seen[e.Time] {
				return true
			}
			seen[e.Time] = true
		}
	}
	return false
}
