package formats

import (
	"bytes"
	"encoding/json"
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
	need := false
	for _, s := range steps {
		if s.Role == domain.RoleTool && jsonContainer(s.Content) {
			need = true
			break
		}
	}
	if !need {
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
// to its compact text as written.
func collectOrderedJSON(raw []byte, into map[string]string, depth int) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || depth > 32 {
		return
	}
	switch raw[0] {
	case '{', '[':
		var v any
		if decodeJSON(raw, &v) != nil {
			return
		}
		sorted, err := json.Marshal(v)
		if err != nil {
			return
		}
		var compact bytes.Buffer
		if json.Compact(&compact, raw) == nil && compact.String() != string(sorted) {
			into[string(sorted)] = compact.String()
		}
		if raw[0] == '{' {
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) == nil {
				for _, c := range m {
					collectOrderedJSON(c, into, depth+1)
				}
			}
		} else {
			var l []json.RawMessage
			if json.Unmarshal(raw, &l) == nil {
				for _, c := range l {
					collectOrderedJSON(c, into, depth+1)
				}
			}
		}
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil && jsonContainer(s) {
			collectOrderedJSON([]byte(s), into, depth+1)
		}
	}
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
