package formats

// OpenTelemetry adapter.
//
// API for the live OTLP receiver (POST /otel/v1/traces):
//
//   - The receiver decodes protobuf or JSON with pdata and re-encodes the
//     request with ptrace.JSONMarshaler (standard OTLP/JSON, hex ids), then
//     calls SplitSpans on those bytes. Each RawSpan carries the OTel trace id
//     and span id (lowercase hex) and a self-contained OTLP/JSON request
//     holding only that span with its resource and scope: store it per
//     (owner, trace id, span id); a re-sent span overwrites itself.
//   - For every trace the request touched, load all of its stored RawSpans
//     and call RebuildTrace. It returns the canonical trace (ExternalID = the
//     hex trace id, already validated) and whether the trace has LLM
//     messages yet; when it has none the trace is stored but not shown. An
//     error is a *domain.ValidationError: answer 400 and store nothing.
//
// Parse (the `otel` import format) and RebuildTrace share one builder, so a
// trace received live and the same trace imported from a Collector file come
// out the same.
//
// This adapter decodes OTLP/JSON itself (stdlib only) instead of through
// pdata's unmarshaler, because real exporters bend the spec in ways pdata
// rejects or misreads: base64 ids (protojson style) next to hex ids, enum
// names in several spellings ("SPAN_KIND_CLIENT", "CLIENT", 3), int64s as
// strings or numbers, snake_case field names (proto field names), and
// attributes as plain JSON objects. It also keeps this package buildable
// without pdata's transitive dependencies in go.sum.

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/criticml/critic/domain"
)

// OTel imports OTLP/JSON traces and logs carrying LLM calls.
type OTel struct{}

func (OTel) Name() string { return "otel" }
func (OTel) Description() string {
	return "OpenTelemetry OTLP/JSON (resourceSpans/resourceLogs), one request or Collector file-exporter JSONL; " +
		"reads OTel GenAI, OpenInference, OpenLLMetry and Vercel AI SDK LLM spans; one trace per traceId."
}

// Detect: the payload's first key is resourceSpans or resourceLogs (proto
// field names too), which no other supported format uses.
func (OTel) Detect(data []byte) bool {
	return slices.Contains([]string{"resourceSpans", "resourceLogs", "resource_spans", "resource_logs"}, firstObjectKey(data))
}

// firstObjectKey returns the first key of the first JSON object in data, or "".
func firstObjectKey(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data[:min(len(data), 1<<16)]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	tok, _ := dec.Token() // nil on error
	k, _ := tok.(string)
	return k
}

// Parse reads a single OTLP/JSON request (possibly pretty-printed), a JSON
// array of requests, or JSONL with one request per line (the Collector file
// exporter; spans and logs lines may be mixed). Traces without any LLM call
// (plain HTTP or database traces sharing the file) are skipped; it is an
// error only when no trace has one.
func (OTel) Parse(data []byte) ([]domain.Trace, error) {
	var recs otelRecords
	if err := eachValue(data, json.Valid(data), recs.addRequest); err != nil {
		return nil, err
	}
	if len(recs.spans) == 0 && len(recs.logs) == 0 {
		return nil, domain.Invalid("the payload holds no spans or log records")
	}
	groups, err := joinRootless(&recs)
	if err != nil {
		return nil, err
	}
	var out []domain.Trace
	for _, g := range groups {
		t, ok, err := recs.build(g.id, g.tids, nil, nil)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, domain.Invalid("no trace holds an LLM call with messages (gen_ai.*, llm.* or OpenLLMetry attributes)")
	}
	return out, nil
}

// RawSpan is one span as the live receiver stores it.
type RawSpan struct {
	TraceID string // lowercase hex, 32 chars
	SpanID  string // lowercase hex, 16 chars
	// JSON is an OTLP/JSON ExportTraceServiceRequest holding only this span,
	// with its resource and scope, so it can be rebuilt on its own.
	JSON []byte
}

// SplitSpans splits an OTLP/JSON traces request into one RawSpan per span.
// The request is validated as Parse would (ids, timestamps, attributes), so a
// malformed request is rejected before anything is stored.
func SplitSpans(data []byte) ([]RawSpan, error) {
	var v any
	if err := decodeJSON(data, &v); err != nil {
		return nil, err
	}
	var recs otelRecords
	if err := recs.addRequest(v, 0, ""); err != nil {
		return nil, err
	}
	root, _ := v.(map[string]any)
	var out []RawSpan
	for _, rs := range anyList(pickKey(root, "resourceSpans", "resource_spans")) {
		rsm, _ := rs.(map[string]any)
		for _, ss := range anyList(pickKey(rsm, "scopeSpans", "scope_spans", "instrumentationLibrarySpans")) {
			ssm, _ := ss.(map[string]any)
			for _, sp := range anyList(pickKey(ssm, "spans")) {
				spm, _ := sp.(map[string]any)
				// addRequest checked both ids.
				tid, _ := otelID(pickKey(spm, "traceId", "trace_id"), 16, 0, "traceId")
				sid, _ := otelID(pickKey(spm, "spanId", "span_id"), 8, 0, "spanId")
				req := map[string]any{"resourceSpans": []any{map[string]any{
					"resource": pickKey(rsm, "resource"),
					"scopeSpans": []any{map[string]any{
						"scope": pickKey(ssm, "scope", "instrumentationLibrary"),
						"spans": []any{spm},
					}},
				}}}
				b, err := json.Marshal(req)
				if err != nil {
					return nil, domain.Invalid("span %s: %v", sid, err)
				}
				out = append(out, RawSpan{TraceID: tid, SpanID: sid, JSON: b})
			}
		}
	}
	return out, nil
}

// logKeyPrefix marks a stored log record among a trace's spans: the live
// receiver keeps log records (the GenAI instrumentations' message events)
// in the same per-trace store, keyed "log:<span id>:<time>:<index>:<hash>"
// so that sorting the keys puts them after the spans, in time order, and a
// re-sent record (an exporter retry) overwrites itself.
const logKeyPrefix = "log:"

// IsLog says whether the record is a log record (not a span).
func (r RawSpan) IsLog() bool { return strings.HasPrefix(r.SpanID, logKeyPrefix) }

// SplitLogs splits an OTLP/JSON logs request into one RawSpan per GenAI
// log record (event name gen_ai.*), keyed as logKeyPrefix says. A record
// without a trace id cannot be joined to any conversation, and other log
// records (application logs sharing the exporter) hold no conversation:
// neither is returned; they are counted in unjoinable and other. The request
// is validated as Parse would, so a malformed request is rejected before
// anything is stored.
func SplitLogs(data []byte) (out []RawSpan, unjoinable, other int, err error) {
	var v any
	if err := decodeJSON(data, &v); err != nil {
		return nil, 0, 0, err
	}
	var recs otelRecords
	if err := recs.addRequest(v, 0, ""); err != nil {
		return nil, 0, 0, err
	}
	root, _ := v.(map[string]any)
	index := 0
	for _, rl := range anyList(pickKey(root, "resourceLogs", "resource_logs")) {
		rlm, _ := rl.(map[string]any)
		for _, sl := range anyList(pickKey(rlm, "scopeLogs", "scope_logs", "instrumentationLibraryLogs")) {
			slm, _ := sl.(map[string]any)
			for _, lr := range anyList(pickKey(slm, "logRecords", "log_records")) {
				lrm, _ := lr.(map[string]any)
				index++
				attrs, _ := otelAttrs(pickKey(lrm, "attributes"), 0, "attributes")
				if name := firstString(pickKey(lrm, "eventName", "event_name"), attrs["event.name"]); !strings.HasPrefix(name, "gen_ai.") {
					other++
					continue
				}
				tid, _ := otelID(pickKey(lrm, "traceId", "trace_id"), 16, 0, "traceId")
				if tid == "" {
					unjoinable++
					continue
				}
				sid, _ := otelID(pickKey(lrm, "spanId", "span_id"), 8, 0, "spanId")
				ts, _ := otelNanos(pickKey(lrm, "timeUnixNano", "time_unix_nano"), 0, "timeUnixNano")
				if ts == 0 {
					ts, _ = otelNanos(pickKey(lrm, "observedTimeUnixNano", "observed_time_unix_nano"), 0, "observedTimeUnixNano")
				}
				req := map[string]any{"resourceLogs": []any{map[string]any{
					"resource": pickKey(rlm, "resource"),
					"scopeLogs": []any{map[string]any{
						"scope":      pickKey(slm, "scope", "instrumentationLibrary"),
						"logRecords": []any{lrm},
					}},
				}}}
				b, err := json.Marshal(req)
				if err != nil {
					return nil, 0, 0, domain.Invalid("log record %d: %v", index, err)
				}
				sum := sha256.Sum256(b)
				key := fmt.Sprintf("%s%s:%020d:%06d:%s", logKeyPrefix, sid, ts, index, hex.EncodeToString(sum[:8]))
				out = append(out, RawSpan{TraceID: tid, SpanID: key, JSON: b})
			}
		}
	}
	return out, unjoinable, other, nil
}

// RebuildTrace builds the canonical trace from all stored spans of one
// trace. hasLLM is false (and the trace empty) while none of the spans
// carries LLM messages.
func RebuildTrace(spans []RawSpan) (t domain.Trace, hasLLM bool, err error) {
	return RebuildConversation(spans, "", nil, nil)
}

// SpanIO is a built span's input and output (domain.Span's).
type SpanIO struct{ Input, Output json.RawMessage }

// RebuildConversation is RebuildTrace for a conversation the live receiver
// joined from several OTel traces (see ThreadOf): the calls of all of them
// form one trace whose external id is externalID. With externalID "" the
// records must be of one OTel trace, whose id is the external id.
//
// built holds, by span id, the input and output of the spans whose records
// are the ones the stored trace was built from (nil: none). A span's input
// and output are read from its own attributes alone, so those are taken as
// they are instead of decoding and encoding its attributes again: a live
// agent's every LLM span holds the conversation so far, and the receiver
// rebuilds the trace on each export. memo, when not nil, is the
// conversation's SpanMemo: records read before are not decoded again, and
// it keeps only the records given.
func RebuildConversation(spans []RawSpan, externalID string, built map[string]SpanIO, memo *SpanMemo) (t domain.Trace, hasLLM bool, err error) {
	var recs otelRecords
	seenLogs := map[string]bool{}
	for i, rs := range spans {
		if rs.IsLog() {
			// The content hash ends the key: a record re-sent in a
			// differently grouped batch gets another index but the same hash.
			h := rs.SpanID[strings.LastIndexByte(rs.SpanID, ':')+1:]
			if seenLogs[h] {
				continue // the same record re-sent in another batch
			}
			seenLogs[h] = true
		}
		if err := memo.add(&recs, rs, fmt.Sprintf("spans[%d].", i)); err != nil {
			return t, false, err
		}
	}
	memo.sweep()
	order := recs.traceOrder()
	if len(order) == 0 {
		return t, false, nil
	}
	if externalID == "" {
		if len(order) > 1 {
			return t, false, domain.Invalid("spans of %d different traces given to RebuildTrace", len(order))
		}
		externalID = order[0]
	}
	return recs.build(externalID, order, built, memo)
}

// ---------------------------------------------------------------------------
// Decoding OTLP/JSON tolerantly

// otelSpan is a decoded span.
type otelSpan struct {
	TraceID, SpanID, ParentID string
	Name                      string
	Kind                      *string
	Start, End                int64
	Attrs                     map[string]any
	Events                    []otelEvent
	Resource                  map[string]any
	Seq                       int // arrival order, to keep ties stable
	// call is the span's memo slot (SpanMemo), shared by its copies; nil
	// for a span read without a memo or with log records joined to it.
	call *callSlot
}

// otelEvent is a span event or a log record (events are logs in OTel).
type otelEvent struct {
	Name    string
	Time    int64
	Attrs   map[string]any
	Body    any
	TraceID string
	SpanID  string
	Seq     int
}

type otelRecords struct {
	spans []otelSpan
	logs  []otelEvent
	seq   int
}

func (r *otelRecords) traceOrder() []string {
	seen := map[string]bool{}
	var order []string
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			order = append(order, id)
		}
	}
	for _, s := range r.spans {
		add(s.TraceID)
	}
	for _, l := range r.logs {
		add(l.TraceID)
	}
	return order
}

// spansOf returns a trace's spans; a span sent twice (exporter retries in a
// file) keeps its last copy.
func (r *otelRecords) spansOf(tid string) []otelSpan {
	idx := map[string]int{}
	var out []otelSpan
	for _, s := range r.spans {
		if s.TraceID != tid {
			continue
		}
		if i, ok := idx[s.SpanID]; ok {
			out[i] = s
			continue
		}
		idx[s.SpanID] = len(out)
		out = append(out, s)
	}
	return out
}

func (r *otelRecords) logsOf(tid string) []otelEvent {
	var out []otelEvent
	for _, l := range r.logs {
		if l.TraceID == tid {
			out = append(out, l)
		}
	}
	return out
}

// addRequest decodes one ExportTraceServiceRequest or ExportLogsServiceRequest.
func (r *otelRecords) addRequest(v any, line int, prefix string) error {
	root, ok := v.(map[string]any)
	if !ok {
		return domain.InvalidAt(line, strings.TrimSuffix(prefix, "."), "expected an OTLP/JSON object with resourceSpans or resourceLogs")
	}
	rss, hasSpans := pickKeyOK(root, "resourceSpans", "resource_spans")
	rls, hasLogs := pickKeyOK(root, "resourceLogs", "resource_logs")
	if !hasSpans && !hasLogs {
		return domain.InvalidAt(line, strings.TrimSuffix(prefix, "."), "expected resourceSpans or resourceLogs")
	}
	for i, rs := range anyList(rss) {
		f := fmt.Sprintf("%sresourceSpans[%d]", prefix, i)
		rsm, ok := rs.(map[string]any)
		if !ok {
			return domain.InvalidAt(line, f, "expected an object")
		}
		resource, _ := pickKey(rsm, "resource").(map[string]any)
		res, err := otelAttrs(pickKey(resource, "attributes"), line, f+".resource.attributes")
		if err != nil {
			return err
		}
		for j, ss := range anyList(pickKey(rsm, "scopeSpans", "scope_spans", "instrumentationLibrarySpans")) {
			ssm, _ := ss.(map[string]any)
			for k, sp := range anyList(pickKey(ssm, "spans")) {
				sf := fmt.Sprintf("%s.scopeSpans[%d].spans[%d]", f, j, k)
				s, err := r.decodeSpan(sp, res, line, sf)
				if err != nil {
					return err
				}
				r.spans = append(r.spans, s)
			}
		}
	}
	for i, rl := range anyList(rls) {
		f := fmt.Sprintf("%sresourceLogs[%d]", prefix, i)
		rlm, ok := rl.(map[string]any)
		if !ok {
			return domain.InvalidAt(line, f, "expected an object")
		}
		for j, sl := range anyList(pickKey(rlm, "scopeLogs", "scope_logs", "instrumentationLibraryLogs")) {
			slm, _ := sl.(map[string]any)
			for k, lr := range anyList(pickKey(slm, "logRecords", "log_records")) {
				lf := fmt.Sprintf("%s.scopeLogs[%d].logRecords[%d]", f, j, k)
				ev, err := r.decodeLog(lr, line, lf)
				if err != nil {
					return err
				}
				if ev.TraceID != "" { // a log outside any trace has no conversation to join
					r.logs = append(r.logs, ev)
				}
			}
		}
	}
	return nil
}

func (r *otelRecords) decodeSpan(v any, res map[string]any, line int, f string) (otelSpan, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return otelSpan{}, domain.InvalidAt(line, f, "a span must be an object")
	}
	var s otelSpan
	var err error
	if s.TraceID, err = otelID(pickKey(m, "traceId", "trace_id"), 16, line, f+".traceId"); err != nil {
		return s, err
	}
	if s.TraceID == "" {
		return s, domain.InvalidAt(line, f+".traceId", "missing trace id")
	}
	if s.SpanID, err = otelID(pickKey(m, "spanId", "span_id"), 8, line, f+".spanId"); err != nil {
		return s, err
	}
	if s.SpanID == "" {
		return s, domain.InvalidAt(line, f+".spanId", "missing span id")
	}
	if s.ParentID, err = otelID(pickKey(m, "parentSpanId", "parent_span_id"), 8, line, f+".parentSpanId"); err != nil {
		return s, err
	}
	s.Name = anyString(pickKey(m, "name"))
	if s.Kind, err = otelKind(pickKey(m, "kind"), line, f+".kind"); err != nil {
		return s, err
	}
	if s.Start, err = otelNanos(pickKey(m, "startTimeUnixNano", "start_time_unix_nano"), line, f+".startTimeUnixNano"); err != nil {
		return s, err
	}
	if s.End, err = otelNanos(pickKey(m, "endTimeUnixNano", "end_time_unix_nano"), line, f+".endTimeUnixNano"); err != nil {
		return s, err
	}
	if s.End == 0 { // a span exported before it ended (some SDKs' live views)
		s.End = s.Start
	}
	if s.Attrs, err = otelAttrs(pickKey(m, "attributes"), line, f+".attributes"); err != nil {
		return s, err
	}
	for i, e := range anyList(pickKey(m, "events")) {
		ef := fmt.Sprintf("%s.events[%d]", f, i)
		em, ok := e.(map[string]any)
		if !ok {
			return s, domain.InvalidAt(line, ef, "an event must be an object")
		}
		ev := otelEvent{Name: anyString(pickKey(em, "name")), TraceID: s.TraceID, SpanID: s.SpanID}
		if ev.Time, err = otelNanos(pickKey(em, "timeUnixNano", "time_unix_nano"), line, ef+".timeUnixNano"); err != nil {
			return s, err
		}
		if ev.Attrs, err = otelAttrs(pickKey(em, "attributes"), line, ef+".attributes"); err != nil {
			return s, err
		}
		r.seq++
		ev.Seq = r.seq
		s.Events = append(s.Events, ev)
	}
	s.Resource = res
	r.seq++
	s.Seq = r.seq
	return s, nil
}

func (r *otelRecords) decodeLog(v any, line int, f string) (otelEvent, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return otelEvent{}, domain.InvalidAt(line, f, "a log record must be an object")
	}
	var ev otelEvent
	var err error
	if ev.TraceID, err = otelID(pickKey(m, "traceId", "trace_id"), 16, line, f+".traceId"); err != nil {
		return ev, err
	}
	if ev.SpanID, err = otelID(pickKey(m, "spanId", "span_id"), 8, line, f+".spanId"); err != nil {
		return ev, err
	}
	if ev.Time, err = otelNanos(pickKey(m, "timeUnixNano", "time_unix_nano"), line, f+".timeUnixNano"); err != nil {
		return ev, err
	}
	if ev.Time == 0 {
		if ev.Time, err = otelNanos(pickKey(m, "observedTimeUnixNano", "observed_time_unix_nano"), line, f+".observedTimeUnixNano"); err != nil {
			return ev, err
		}
	}
	if ev.Attrs, err = otelAttrs(pickKey(m, "attributes"), line, f+".attributes"); err != nil {
		return ev, err
	}
	if ev.Body, err = otelAnyValue(m["body"], line, f+".body"); err != nil { // absent: nil
		return ev, err
	}
	ev.Name = firstString(pickKey(m, "eventName", "event_name"), ev.Attrs["event.name"])
	r.seq++
	ev.Seq = r.seq
	return ev, nil
}

// pickKey returns the first present key's value (camelCase and proto names).
func pickKey(m map[string]any, keys ...string) any {
	v, _ := pickKeyOK(m, keys...)
	return v
}

func pickKeyOK(m map[string]any, keys ...string) (any, bool) {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v, true
		}
	}
	return nil, false
}

func anyList(v any) []any { l, _ := v.([]any); return l }

// otelID accepts a hex id (the OTLP/JSON spec) or a base64 one (protojson's
// encoding of bytes, which some exporters emit) of n bytes and returns it as
// lowercase hex. Empty and all-zero ids are "" (no parent).
func otelID(v any, n int, line int, field string) (string, error) {
	if v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", domain.InvalidAt(line, field, "an id must be a string")
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	var b []byte
	if len(s) == 2*n {
		if d, err := hex.DecodeString(s); err == nil {
			b = d
		}
	}
	if b == nil {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if d, err := enc.DecodeString(s); err == nil && len(d) == n {
				b = d
				break
			}
		}
	}
	if b == nil {
		return "", domain.InvalidAt(line, field, "%q is not a %d-byte id in hex or base64", s, n)
	}
	if slices.Max(b) == 0 {
		return "", nil
	}
	return hex.EncodeToString(b), nil
}

// otelNanos accepts a uint64 nanosecond time as a JSON string or number.
func otelNanos(v any, line int, field string) (int64, error) {
	var s string
	switch x := v.(type) {
	case nil:
		return 0, nil
	case string:
		s = strings.TrimSpace(x)
		if s == "" {
			return 0, nil
		}
	case json.Number:
		s = x.String()
	default:
		return 0, domain.InvalidAt(line, field, "a timestamp must be a string or a number")
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64) // 1.7e18 from JavaScript exporters
		if ferr != nil || f < 0 || f >= math.MaxInt64 {
			return 0, domain.InvalidAt(line, field, "%q is not a nanosecond timestamp", s)
		}
		return int64(f), nil
	}
	if n > math.MaxInt64 {
		return 0, domain.InvalidAt(line, field, "timestamp %s is out of range", s)
	}
	return int64(n), nil
}

var otelKinds = []string{"", "internal", "server", "client", "producer", "consumer"}

// otelKind accepts the enum as a number or a name in any of the spellings
// exporters use; unspecified is nil.
func otelKind(v any, line int, field string) (*string, error) {
	var k string
	switch x := v.(type) {
	case nil:
		return nil, nil
	case json.Number:
		n, err := strconv.Atoi(x.String())
		if err != nil || n < 0 || n >= len(otelKinds) {
			return nil, domain.InvalidAt(line, field, "unknown span kind %s", x)
		}
		k = otelKinds[n]
	case string:
		k = strings.ToLower(strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(x)), "SPAN_KIND_"))
		if n, err := strconv.Atoi(k); err == nil && n >= 0 && n < len(otelKinds) {
			k = otelKinds[n]
		}
		if k == "unspecified" {
			k = ""
		}
		if !slices.Contains(otelKinds, k) {
			return nil, domain.InvalidAt(line, field, "unknown span kind %q", x)
		}
	default:
		return nil, domain.InvalidAt(line, field, "a span kind must be a string or a number")
	}
	if k == "" {
		return nil, nil
	}
	return &k, nil
}

// otelAttrs decodes a KeyValue list; a plain JSON object is accepted too.
func otelAttrs(v any, line int, field string) (map[string]any, error) {
	out := map[string]any{}
	switch x := v.(type) {
	case nil:
	case map[string]any:
		maps.Copy(out, x)
	case []any:
		for i, kv := range x {
			m, ok := kv.(map[string]any)
			if !ok {
				return nil, domain.InvalidAt(line, fmt.Sprintf("%s[%d]", field, i), "an attribute must be {key, value}")
			}
			key := anyString(m["key"])
			val, err := otelAnyValue(m["value"], line, fmt.Sprintf("%s[%d].value", field, i))
			if err != nil {
				return nil, err
			}
			out[key] = val
		}
	default:
		return nil, domain.InvalidAt(line, field, "attributes must be a list of {key, value}")
	}
	return out, nil
}

// otelAnyValue turns an AnyValue into a plain Go value: string, int64,
// float64, bool, []any, map[string]any. A value that is not wrapped in an
// AnyValue object is taken as it is.
func otelAnyValue(v any, line int, field string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	if len(m) == 0 {
		return nil, nil
	}
	for k, x := range m {
		switch k {
		case "stringValue", "string_value", "bytesValue", "bytes_value":
			return anyString(x), nil
		case "boolValue", "bool_value":
			b, _ := x.(bool)
			if s, isStr := x.(string); isStr {
				b = s == "true"
			}
			return b, nil
		case "intValue", "int_value":
			s := anyString(x)
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, domain.InvalidAt(line, field+".intValue", "%q is not an int64", s)
			}
			return n, nil
		case "doubleValue", "double_value":
			s := anyString(x)
			switch strings.ToLower(s) {
			case "nan", "infinity", "-infinity":
				return s, nil
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, domain.InvalidAt(line, field+".doubleValue", "%q is not a number", s)
			}
			return f, nil
		case "arrayValue", "array_value":
			am, _ := x.(map[string]any)
			out := []any{}
			for i, e := range anyList(pickKey(am, "values")) {
				d, err := otelAnyValue(e, line, fmt.Sprintf("%s.arrayValue.values[%d]", field, i))
				if err != nil {
					return nil, err
				}
				out = append(out, d)
			}
			return out, nil
		case "kvlistValue", "kvlist_value":
			km, _ := x.(map[string]any)
			return otelAttrs(pickKey(km, "values"), line, field+".kvlistValue.values")
		}
	}
	// Not an AnyValue: a plain object some exporters write directly.
	return m, nil
}

// ---------------------------------------------------------------------------
// Building a trace

// buildOTelTrace joins a trace's LLM calls. ok is false when it has none.
func buildOTelTrace(tid string, spans []otelSpan, logs []otelEvent, built map[string]SpanIO, memo *SpanMemo) (domain.Trace, bool, error) {
	slices.SortStableFunc(spans, func(a, b otelSpan) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Seq, b.Seq))
	})
	bySpan := map[string]int{}
	for i, s := range spans {
		bySpan[s.SpanID] = i
	}
	// Log records (events emitted as logs) join their span; those whose span
	// is not in the payload form a call of their own.
	orphans := map[string][]otelEvent{}
	var orphanOrder []string
	for _, l := range logs {
		if i, ok := bySpan[l.SpanID]; ok {
			spans[i].Events = append(spans[i].Events, l)
			spans[i].call = nil // read with its logs, not as memoized
			continue
		}
		if _, ok := orphans[l.SpanID]; !ok {
			orphanOrder = append(orphanOrder, l.SpanID)
		}
		orphans[l.SpanID] = append(orphans[l.SpanID], l)
	}

	type call struct {
		llmCall
		start int64
		seq   int
		span  int       // index in spans, -1 for log-only calls
		slot  *callSlot // the span's memo slot, nil when none
	}
	var calls []call
	for i, s := range spans {
		c, err := s.callOf()
		if err != nil {
			return domain.Trace{}, false, err
		}
		if !c.isLLM {
			continue
		}
		calls = append(calls, call{llmCall: llmCall{Input: c.in, Output: c.out, Unordered: c.unordered,
			InputTime: rfc3339Nanos(s.Start), OutputTime: rfc3339Nanos(s.End)}, start: s.Start, seq: s.Seq, span: i, slot: s.call})
	}
	for _, sid := range orphanOrder {
		evs := orphans[sid]
		in, out, isLLM := otelCallMessages(nil, evs)
		if !isLLM || len(in)+len(out) == 0 {
			continue
		}
		in = keepToolKeyOrder(in, nil, evs)
		start, end := evs[0].Time, evs[0].Time
		for _, e := range evs {
			start, end = min(start, e.Time), max(end, e.Time)
		}
		calls = append(calls, call{llmCall: llmCall{Input: in, Output: out, Unordered: tiedMessageEvents(evs),
			InputTime: rfc3339Nanos(start), OutputTime: rfc3339Nanos(end)}, start: start, seq: evs[0].Seq, span: -1})
	}
	if len(calls) == 0 {
		return domain.Trace{}, false, nil
	}
	slices.SortStableFunc(calls, func(a, b call) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.seq, b.seq))
	})
	plain := make([]llmCall, len(calls))
	slots := make([]*callSlot, len(calls))
	for i, c := range calls {
		plain[i], slots[i] = c.llmCall, c.slot
	}
	steps, produced := memo.join(slots, plain)
	if !slices.ContainsFunc(steps, func(st domain.Step) bool { return st.Role != domain.RoleSystem }) {
		// Only system instructions so far (the messages come in a later
		// request, or as log records): stored, not listed yet.
		return domain.Trace{}, false, nil
	}
	indices := make([][]int, len(spans))
	for i, c := range calls {
		if c.span >= 0 {
			indices[c.span] = append(indices[c.span], produced[i]...)
		}
	}

	t := domain.Trace{ExternalID: tid, Steps: steps, Metadata: otelMetadata(spans, calls[0].span)}
	for i, s := range spans {
		sp := builtSpan(domain.Span{ID: s.SpanID, Name: s.Name, Kind: s.Kind, StartNs: s.Start, EndNs: s.End,
			StepIndices: indices[i]}, "", s.ParentID)
		if io, ok := built[s.SpanID]; ok {
			sp.Input, sp.Output = io.Input, io.Output
		} else {
			sp.Input, sp.Output = otelSpanIO(s.Attrs)
		}
		t.Spans = append(t.Spans, sp)
	}
	if err := domain.ValidateTrace(withoutBuiltIO(t, built), 0); err != nil {
		return domain.Trace{}, false, err
	}
	return t, true, nil
}

// withoutBuiltIO is t to validate: the input and output taken from built
// were checked when the trace holding them was stored, and each LLM span's
// holds the conversation so far, so checking them again on every export
// would read everything the run sent.
func withoutBuiltIO(t domain.Trace, built map[string]SpanIO) domain.Trace {
	if len(built) == 0 {
		return t
	}
	t.Spans = slices.Clone(t.Spans)
	for i, sp := range t.Spans {
		if _, ok := built[sp.ID]; ok {
			t.Spans[i].Input, t.Spans[i].Output = nil, nil
		}
	}
	return t
}

// otelMetadata: agent from gen_ai.agent.name or the service name (unless
// the SDK's "unknown_service" default), model and provider from the first
// LLM span that names them.
func otelMetadata(spans []otelSpan, firstLLM int) map[string]any {
	md := map[string]any{}
	order := make([]int, 0, len(spans))
	if firstLLM >= 0 {
		order = append(order, firstLLM)
	}
	for i := range spans {
		if i != firstLLM {
			order = append(order, i)
		}
	}
	set := func(key string, vals ...any) {
		if _, ok := md[key]; ok {
			return
		}
		putString(md, key, firstString(vals...))
	}
	for _, i := range order {
		a := spans[i].Attrs
		set("model", a["gen_ai.request.model"], a["gen_ai.response.model"], a["llm.model_name"], a["llm.request.model"], a["ai.model.id"])
		set("provider", a["gen_ai.provider.name"], a["gen_ai.system"], a["llm.provider"], a["llm.system"], a["ai.model.provider"])
		// The Vercel AI SDK names the agent ai.telemetry.functionId up to
		// v6 and gen_ai.agent.name from v7: the same source either way.
		set("agent", a["gen_ai.agent.name"], a["ai.telemetry.functionId"], a["langfuse.trace.name"])
		if _, ok := md["tools"]; !ok {
			if tools := otelToolDefinitions(a); len(tools) > 0 {
				md["tools"] = tools
			}
		}
	}
	for _, s := range spans {
		if svc := anyString(s.Resource["service.name"]); svc != "" && !strings.HasPrefix(svc, "unknown_service") {
			set("agent", svc)
		}
	}
	if len(md) == 0 {
		return nil
	}
	return md
}

// otelSpanIO returns what a span recorded as its input and output, as JSON:
// OpenInference input.value/output.value (decoded when they hold JSON), GenAI
// messages, OpenLLMetry entity input/output, GenAI tool call arguments and
// result, or the Vercel AI SDK's prompt, response and tool call attributes
// (an empty ai.response.text is skipped for the tool calls).
func otelSpanIO(a map[string]any) (in, out json.RawMessage) {
	val := func(keys ...string) json.RawMessage {
		for _, k := range keys {
			v, ok := a[k]
			if s, isStr := v.(string); !ok || v == nil || (isStr && s == "" && strings.HasPrefix(k, "ai.")) {
				continue
			}
			return spanJSON(decodeAttrJSON(v))
		}
		return nil
	}
	return val("input.value", "gen_ai.input.messages", "traceloop.entity.input", "gen_ai.tool.call.arguments",
			"ai.prompt.messages", "ai.prompt", "ai.toolCall.args"),
		val("output.value", "gen_ai.output.messages", "traceloop.entity.output", "gen_ai.tool.call.result",
			"ai.response.text", "ai.response.toolCalls", "ai.response.object", "ai.toolCall.result")
}

// checkGenAIMessagesJSON rejects a span whose gen_ai.input.messages or
// gen_ai.output.messages string is not JSON: the conventions define them as
// JSON, so anything else is a message that failed to parse (400 on the live
// receiver, 422 on import), never silently read as text.
func checkGenAIMessagesJSON(s otelSpan) error {
	for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages"} {
		v, ok := s.Attrs[k].(string)
		if !ok {
			continue
		}
		// Valid, not decoded: genAIMessages and otelSpanIO decode it, and a
		// live agent's every call re-sends the conversation so far.
		if t := strings.TrimSpace(v); t == "" || (t[0] != '[' && t[0] != '{') || !json.Valid([]byte(t)) {
			return &domain.ValidationError{Code: "invalid_spans", Field: k,
				Message: fmt.Sprintf("span %s: %s is not valid JSON messages", s.SpanID, k)}
		}
	}
	return nil
}

// otelCallMetadata is what one LLM call recorded about itself: the model
// that answered and its token usage, in the GenAI, OpenInference,
// OpenLLMetry, Vercel AI SDK and Langfuse spellings. It goes on the steps the
// call produced, so usage and model are per call, not per trace.
func otelCallMetadata(a map[string]any) map[string]any {
	md := map[string]any{}
	putString(md, "model", firstString(a["gen_ai.response.model"], a["gen_ai.request.model"], a["llm.model_name"], a["llm.response.model"],
		a["llm.request.model"], a["ai.response.model"], a["ai.model.id"], a["langfuse.observation.model.name"]))
	usage := map[string]any{}
	num := func(key string, vals ...any) {
		if _, ok := usage[key]; ok {
			return
		}
		for _, v := range vals {
			switch x := v.(type) {
			case int64:
				usage[key] = x
				return
			case float64:
				usage[key] = int64(x)
				return
			case json.Number:
				if n, err := x.Int64(); err == nil {
					usage[key] = n
					return
				}
			case string:
				if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
					usage[key] = n
					return
				}
			}
		}
	}
	lf, _ := decodeAttrJSON(a["langfuse.observation.usage_details"]).(map[string]any)
	num("input_tokens", a["gen_ai.usage.input_tokens"], a["gen_ai.usage.prompt_tokens"], a["llm.token_count.prompt"],
		a["llm.usage.prompt_tokens"], a["ai.usage.inputTokens"], a["ai.usage.promptTokens"], lf["input"], lf["prompt_tokens"], lf["input_tokens"])
	num("output_tokens", a["gen_ai.usage.output_tokens"], a["gen_ai.usage.completion_tokens"], a["llm.token_count.completion"],
		a["llm.usage.completion_tokens"], a["ai.usage.outputTokens"], a["ai.usage.completionTokens"], lf["output"], lf["completion_tokens"], lf["output_tokens"])
	num("total_tokens", a["gen_ai.usage.total_tokens"], a["llm.token_count.total"], a["llm.usage.total_tokens"],
		a["ai.usage.totalTokens"], lf["total"], lf["total_tokens"])
	num("cached_input_tokens", a["gen_ai.usage.cache_read.input_tokens"], a["gen_ai.usage.cache_read_input_tokens"],
		a["llm.token_count.prompt_details.cache_read"], a["gen_ai.usage.cached_tokens"], a["ai.usage.cachedInputTokens"],
		lf["cache_read_input_tokens"], lf["input_cached_tokens"], lf["cached_tokens"])
	if _, ok := usage["total_tokens"]; !ok {
		in, hasIn := usage["input_tokens"].(int64)
		out, hasOut := usage["output_tokens"].(int64)
		if hasIn && hasOut {
			usage["total_tokens"] = in + out
		}
	}
	if len(usage) > 0 {
		md["usage"] = usage
	}
	return md
}

// withCallMetadata puts a call's model and usage on the steps it produced
// (keeping what a step already says).
func withCallMetadata(steps []domain.Step, md map[string]any) []domain.Step {
	if len(md) == 0 {
		return steps
	}
	out := make([]domain.Step, len(steps))
	for i, st := range steps {
		m := make(map[string]any, len(st.Metadata)+len(md))
		maps.Copy(m, md)
		maps.Copy(m, st.Metadata)
		st.Metadata = m
		out[i] = st
	}
	return out
}

// otelToolDefinitions reads the tools an LLM call was offered:
// gen_ai.tool.definitions (JSON), the Vercel AI SDK's ai.prompt.tools (a
// list of JSON strings), OpenInference's llm.tools.N.tool.json_schema and
// OpenLLMetry's llm.request.functions.N.{name,description,parameters}.
func otelToolDefinitions(a map[string]any) []any {
	var tools []any
	add := func(v any) {
		if m, ok := decodeAttrJSON(v).(map[string]any); ok {
			tools = append(tools, m)
		}
	}
	switch v := decodeAttrJSON(a["gen_ai.tool.definitions"]).(type) {
	case []any:
		for _, t := range v {
			add(t)
		}
	case map[string]any:
		add(v)
	}
	if len(tools) == 0 {
		if list, ok := decodeAttrJSON(a["ai.prompt.tools"]).([]any); ok {
			for _, t := range list {
				add(t)
			}
		}
	}
	if len(tools) == 0 {
		for _, n := range indexedChildren(unflattenAttrs(a, "llm.tools.")) {
			if tool, ok := n["tool"].(map[string]any); ok {
				add(tool["json_schema"])
			}
		}
	}
	if len(tools) == 0 {
		for _, n := range indexedChildren(unflattenAttrs(a, "llm.request.functions.")) {
			t := map[string]any{"name": n["name"]}
			if d, ok := n["description"]; ok {
				t["description"] = d
			}
			if p, ok := n["parameters"]; ok {
				t["parameters"] = decodeAttrJSON(p)
			}
			tools = append(tools, t)
		}
	}
	return tools
}
