package formats

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/criticml/critic/domain"
)

// Langfuse imports traces as Langfuse returns them: the public REST
// GET /api/public/traces/{traceId} response (the trace with `observations`
// inline, input/output parsed), one object or a JSON array of them, and the
// internal/UI shape {trace: {...}, observations: [...]} whose input, output
// and metadata are JSON strings.
type Langfuse struct{}

func (Langfuse) Name() string { return "langfuse" }
func (Langfuse) Description() string {
	return "Langfuse trace JSON (GET /api/public/traces/{id}, trace with observations), one object or an array; " +
		"built from GENERATION observations."
}

// Detect: the first object has an "observations" list next to a trace id or
// a "trace" object. Only the top-level keys are read.
func (Langfuse) Detect(data []byte) bool {
	keys := firstObjectKeys(data)
	return keys["observations"] && (keys["trace"] || keys["id"])
}

// firstObjectKeys lists the keys of the first JSON object in data (the first
// element when data is an array), without decoding the values into Go.
func firstObjectKeys(data []byte) map[string]bool {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	tok, err := dec.Token()
	if tok == json.Delim('[') {
		tok, err = dec.Token()
	}
	if err != nil || tok != json.Delim('{') {
		return nil
	}
	keys := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := tok.(string)
		keys[k] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

// Parse converts every trace in the payload.
func (Langfuse) Parse(data []byte) ([]domain.Trace, error) {
	var out []domain.Trace
	err := eachValue(data, true, func(v any, _ int, prefix string) error {
		t, err := langfuseTrace(v, strings.TrimSuffix(prefix, "."))
		if err != nil {
			return err
		}
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, domain.Invalid("the payload holds no traces")
	}
	return out, nil
}

// langfuseScores keeps a trace's scores as annotations: a boolean score is
// a rating (1 → +1, 0 → −1); a numeric or categorical one says its value in
// the comment, since whether 0.8 is good depends on the score (toxicity or
// correctness). The comment names the score, its value, its source (EVAL,
// API, ANNOTATION) and its author or evaluator, then the score's comment.
func langfuseScores(scores []any) []domain.ImportedAnnotation {
	var out []domain.ImportedAnnotation
	for _, raw := range scores {
		sc, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		id, name := anyString(sc["id"]), anyString(sc["name"])
		if id == "" || name == "" {
			continue
		}
		raw := anyString(sc["value"])
		if b, isBool := sc["value"].(bool); isBool {
			raw = strconv.FormatBool(b)
		}
		value := cmp.Or(anyString(sc["stringValue"]), raw)
		a := domain.ImportedAnnotation{Key: "langfuse-score:" + id, Author: "import:langfuse"}
		if strings.EqualFold(anyString(sc["dataType"]), "BOOLEAN") {
			if r, ok := langfuseBoolRating(raw, anyString(sc["stringValue"])); ok {
				a.Rating = &r
			}
		}
		by := []string{}
		if src := anyString(sc["source"]); src != "" {
			by = append(by, src)
		}
		if u := anyString(sc["authorUserId"]); u != "" {
			by = append(by, "author "+u)
		}
		if c := anyString(sc["configId"]); c != "" {
			by = append(by, "evaluator "+c)
		}
		text := fmt.Sprintf("Langfuse score %s = %s", name, value)
		if obs := anyString(sc["observationId"]); obs != "" {
			text += " on observation " + obs
		}
		if len(by) > 0 {
			text += " (" + strings.Join(by, ", ") + ")"
		}
		if c := anyString(sc["comment"]); c != "" {
			text += ": " + c
		}
		a.Comment = text
		out = append(out, a)
	}
	return out
}

// langfuseBoolRating reads a boolean score (1/0, true/false, or its
// stringValue "True"/"False") as a rating; a value it cannot read gives no
// rating rather than a guessed one.
func langfuseBoolRating(value, stringValue string) (int, bool) {
	for _, v := range []string{value, stringValue} {
		if b, err := strconv.ParseBool(strings.ToLower(strings.TrimSpace(v))); err == nil {
			if b {
				return 1, true
			}
			return -1, true
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && (f == 0 || f == 1) {
			if f == 1 {
				return 1, true
			}
			return -1, true
		}
	}
	return 0, false
}

type lfObservation struct {
	ID, Parent, Type, Name string
	Start, End             int64
	Input, Output          any
	Model                  string
}

func langfuseTrace(v any, field string) (domain.Trace, error) {
	at := func(f string) string { return strings.TrimPrefix(field+"."+f, ".") }
	obj, ok := v.(map[string]any)
	if !ok {
		return domain.Trace{}, domain.InvalidAt(0, field, "expected a Langfuse trace object")
	}
	tr := obj
	if inner, ok := obj["trace"].(map[string]any); ok {
		tr = inner
	}
	rawObs, ok := obj["observations"].([]any)
	if !ok {
		return domain.Trace{}, domain.InvalidAt(0, at("observations"), "expected a list of observations")
	}
	var obs []lfObservation
	for i, ro := range rawObs {
		f := at(fmt.Sprintf("observations[%d]", i))
		om, ok := ro.(map[string]any)
		if !ok {
			return domain.Trace{}, domain.InvalidAt(0, f, "an observation must be an object (export the trace with GET /api/public/traces/{id}, which inlines them)")
		}
		o := lfObservation{ID: anyString(om["id"]), Parent: anyString(om["parentObservationId"]),
			Type: strings.ToUpper(anyString(om["type"])), Name: anyString(om["name"]), Model: anyString(om["model"]),
			Input: lfValue(om["input"]), Output: lfValue(om["output"])}
		if o.ID == "" {
			return domain.Trace{}, domain.InvalidAt(0, f+".id", "observation id is missing")
		}
		var err error
		if o.Start, err = isoTimeNanos(om["startTime"], f+".startTime"); err != nil {
			return domain.Trace{}, err
		}
		if o.End, err = isoTimeNanos(om["endTime"], f+".endTime"); err != nil {
			return domain.Trace{}, err
		}
		if o.End == 0 || o.End < o.Start {
			o.End = o.Start
		}
		obs = append(obs, o)
	}
	sort.SliceStable(obs, func(i, j int) bool { return obs[i].Start < obs[j].Start })

	var calls []llmCall
	var callObs []int
	for i, o := range obs {
		if o.Type != "GENERATION" {
			continue
		}
		in, out := langfuseInput(o.Input), outputToSteps(o.Output)
		if sys := responsesInstructions(o.Output); sys != "" && (len(in) == 0 || in[0].Role != domain.RoleSystem) {
			in = append([]domain.Step{{Role: domain.RoleSystem, Content: sys}}, in...)
		}
		if len(in)+len(out) == 0 {
			continue
		}
		calls = append(calls, llmCall{Input: in, Output: out, InputTime: rfc3339Nanos(o.Start), OutputTime: rfc3339Nanos(o.End)})
		callObs = append(callObs, i)
	}
	if len(calls) == 0 {
		return domain.Trace{}, domain.InvalidAt(0, at("observations"), "no GENERATION observation holds chat messages")
	}
	steps, produced := joinCalls(calls)
	indices := make([][]int, len(obs))
	for ci, oi := range callObs {
		indices[oi] = produced[ci]
	}
	steps, indices = pairToolObservations(steps, indices, obs)

	t := domain.Trace{ExternalID: anyString(tr["id"]), Title: anyString(tr["name"]), Steps: steps}
	md := map[string]any{}
	putString(md, "user_id", anyString(tr["userId"]))
	putString(md, "session_id", anyString(tr["sessionId"]))
	if tags, ok := tr["tags"].([]any); ok && len(tags) > 0 {
		md["tags"] = tags
	}
	putString(md, "agent", anyString(tr["name"]))
	for _, oi := range callObs {
		if obs[oi].Model != "" {
			md["model"] = obs[oi].Model
			break
		}
	}
	if len(md) > 0 {
		t.Metadata = md
	}
	for i, o := range obs {
		t.Spans = append(t.Spans, builtSpan(domain.Span{ID: o.ID, Name: o.Name, StartNs: o.Start, EndNs: o.End,
			Input: spanJSON(o.Input), Output: spanJSON(o.Output), StepIndices: indices[i]}, strings.ToLower(o.Type), o.Parent))
	}
	scores, _ := tr["scores"].([]any)
	if top, ok := obj["scores"].([]any); ok && len(scores) == 0 {
		scores = top
	}
	t.Annotations = langfuseScores(scores)
	for i, a := range t.Annotations {
		if err := domain.CheckText(at(fmt.Sprintf("scores[%d].comment", i)), a.Comment, domain.MaxCommentBytes); err != nil {
			return domain.Trace{}, err
		}
	}
	if err := domain.ValidateTrace(t, 0); err != nil {
		if ve, ok := errors.AsType[*domain.ValidationError](err); ok && field != "" {
			c := *ve
			c.Field = field + "." + c.Field
			return domain.Trace{}, &c
		}
		return domain.Trace{}, err
	}
	return t, nil
}

// lfValue decodes the internal shape's JSON-string payloads (sometimes
// encoded twice); a string that is not JSON is text and stays a string.
func lfValue(v any) any {
	for range 2 {
		s, ok := v.(string)
		if !ok {
			return v
		}
		v = parseJSONString(s)
		if s2, ok := v.(string); ok && s2 == s {
			return v
		}
	}
	return v
}

// langfuseInput reads a generation's input: a message list (chat, Anthropic,
// Responses items), {messages | input, system | instructions}, one message,
// or a plain prompt string.
func langfuseInput(v any) []domain.Step {
	switch x := v.(type) {
	case string:
		if strings.TrimSpace(x) == "" {
			return nil
		}
		return []domain.Step{{Role: domain.RoleUser, Content: x}}
	case []any:
		var out []domain.Step
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, langfuseInput(s)...)
				continue
			}
			out = append(out, messagesToSteps(e)...)
		}
		return out
	case map[string]any:
		msgs, hasMsgs := pickKeyOK(x, "messages", "input", "prompt")
		if !hasMsgs {
			return messagesToSteps(x)
		}
		var out []domain.Step
		switch sys := firstNonNil(x["system"], x["instructions"]).(type) {
		case string:
			if sys != "" {
				out = append(out, domain.Step{Role: domain.RoleSystem, Content: sys})
			}
		case []any:
			out = append(out, roleMessageSteps(domain.RoleSystem, map[string]any{"content": sys})...)
		}
		return append(out, langfuseInput(msgs)...)
	}
	return nil
}

// responsesInstructions returns the instructions an OpenAI Responses result
// echoes: the Agents SDK sends the system prompt there, not in the input.
func responsesInstructions(out any) string {
	m, ok := out.(map[string]any)
	if !ok || anyString(m["object"]) != "response" {
		return ""
	}
	return anyString(m["instructions"])
}

// pairToolObservations fills in tool results that no generation re-sent
// (the Claude Agent SDK's generations record only their output): a tool call
// without a result takes the first unused TOOL observation with the same
// name, preferring one whose input equals the call's, and its output becomes
// a tool step placed after the run of tool calls the call belongs to.
func pairToolObservations(steps []domain.Step, indices [][]int, obs []lfObservation) ([]domain.Step, [][]int) {
	answered := map[string]bool{}
	for _, s := range steps {
		if s.Role == domain.RoleTool && s.ToolCallID != "" {
			answered[s.ToolCallID] = true
		}
	}
	used := map[int]bool{}
	match := map[int]int{} // step index of call → observation index
	for si, s := range steps {
		if !s.IsToolCall() || s.ToolCallID == "" || answered[s.ToolCallID] {
			continue
		}
		best := -1
		for oi, o := range obs {
			if o.Type != "TOOL" || used[oi] || o.Name != s.ToolName {
				continue
			}
			if best < 0 {
				best = oi
			}
			if sameAsJSON(o.Input, s.ToolInput) || sameAsJSON(o.Input, map[string]any{"input": s.ToolInput}) {
				best = oi
				break
			}
		}
		if best >= 0 {
			used[best] = true
			match[si] = best
		}
	}
	if len(match) == 0 {
		return steps, indices
	}
	newIdx := make([]int, len(steps))
	var out []domain.Step
	var pending []int
	flush := func() {
		for _, si := range pending {
			oi := match[si]
			o := obs[oi]
			res := withTimestamp(domain.Step{Role: domain.RoleTool, Content: anyContentText(o.Output),
				ToolName: steps[si].ToolName, ToolCallID: steps[si].ToolCallID}, rfc3339Nanos(o.End))
			indices[oi] = append(indices[oi], len(out))
			out = append(out, res)
		}
		pending = nil
	}
	for si, s := range steps {
		if !s.IsToolCall() {
			flush()
		}
		newIdx[si] = len(out)
		out = append(out, s)
		if _, ok := match[si]; ok {
			pending = append(pending, si)
		}
	}
	flush()
	for oi := range indices {
		if obs[oi].Type == "TOOL" && used[oi] {
			// Its own index was appended in flush (already new numbering).
			continue
		}
		for k, old := range indices[oi] {
			indices[oi][k] = newIdx[old]
		}
	}
	return out, indices
}

func sameAsJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// isoTimeNanos parses an ISO 8601 time (with or without zone; zone-less times
// are UTC, as LangSmith writes them) into Unix nanoseconds; absent is 0.
func isoTimeNanos(v any, field string) (int64, error) {
	s, ok := v.(string)
	if v == nil || (ok && strings.TrimSpace(s) == "") {
		return 0, nil
	}
	if !ok {
		return 0, domain.InvalidAt(0, field, "a time must be an ISO 8601 string")
	}
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixNano(), nil
		}
	}
	return 0, domain.InvalidAt(0, field, "%q is not an ISO 8601 time", s)
}
