package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/criticml/critic/domain/formats"
)

// DefaultMaxRequest is the size a client keeps each request under unless
// told otherwise: well below the server's default 64 MiB body limit, so one
// request never holds up the server for long and progress moves smoothly.
const DefaultMaxRequest = 8 << 20

// Chunk is one request's worth of an input: whole traces only.
type Chunk struct {
	Data []byte
	// Lines maps the chunk's 1-based line numbers to the input's (Lines[i]
	// is the input line of chunk line i+1); nil when the chunk is the whole
	// input or the format is not line-oriented.
	Lines []int
	// Bytes is how many input bytes the chunk covers (for progress).
	Bytes int64
}

// InputLine maps a line the server reported for this chunk back to the
// input's own numbering.
func (c Chunk) InputLine(line int) int {
	if c.Lines == nil || line <= 0 || line > len(c.Lines) {
		return line
	}
	return c.Lines[line-1]
}

// EncodeImport builds the request body {"format", "data", "source_id"?}
// without a detour through encoding/json's reflection: the data string is
// the whole upload.
func EncodeImport(format string, data []byte, sourceID string) []byte {
	out := make([]byte, 0, len(data)+len(data)/16+64)
	out = append(out, `{"format":`...)
	out = appendJSONString(out, []byte(format))
	out = append(out, `,"data":`...)
	out = appendJSONString(out, data)
	if sourceID != "" {
		out = append(out, `,"source_id":`...)
		out = appendJSONString(out, []byte(sourceID))
	}
	return append(out, '}')
}

// EncodedSize is len(EncodeImport(format, data, sourceID)) without
// building it.
func EncodedSize(format string, data []byte, sourceID string) int {
	n := len(`{"format":,"data":}`) + jsonStringLen([]byte(format)) + jsonStringLen(data)
	if sourceID != "" {
		n += len(`,"source_id":`) + jsonStringLen([]byte(sourceID))
	}
	return n
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. s must be valid UTF-8
// (CheckUTF8); U+2028 and U+2029 stay as they are, which JSON allows.
func appendJSONString(out, s []byte) []byte {
	out = append(out, '"')
	start := 0
	for i := range s {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// jsonStringLen is len(appendJSONString(nil, s)).
func jsonStringLen(s []byte) int {
	n := len(s) + 2
	for _, c := range s {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

// CheckUTF8 reports the first invalid byte: the server would otherwise
// replace it and store something other than the file.
func CheckUTF8(data []byte) error {
	if utf8.Valid(data) {
		return nil
	}
	line, off := 1, 0
	for off < len(data) {
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size <= 1 {
			return fmt.Errorf("line %d: not valid UTF-8 (byte offset %d)", line, off)
		}
		if data[off] == '\n' {
			line++
		}
		off += size
	}
	return nil
}

// TooLargeError is an input that cannot be cut into requests under the
// limit without splitting a trace.
type TooLargeError struct {
	What  string
	Size  int
	Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes as a request, over the limit of %d, and cannot be split without splitting a trace (raise the server's CRITIC_MAX_BODY_BYTES and pass --max-request-bytes)", e.What, e.Size, e.Limit)
}

// Split cuts an input of the given format into chunks whose request bodies
// stay under limit, never splitting a trace: line-per-trace formats split
// between lines, LangSmith groups runs by trace_id, OTel JSONL keeps lines
// that share a traceId together, Langfuse arrays split between traces;
// Claude Code and Codex sessions are one trace per file and are never cut.
func Split(format string, data []byte, sourceID string, limit int) ([]Chunk, error) {
	whole := EncodedSize(format, data, sourceID)
	if whole <= limit {
		return []Chunk{{Data: data, Bytes: int64(len(data))}}, nil
	}
	budget := limit - EncodedSize(format, nil, sourceID)
	switch format {
	case "stash", "anthropic_messages":
		return splitLines(data, budget, limit, nil)
	case "openai_chat":
		if firstNonSpace(data) == '[' {
			break // one JSON array of messages is one trace
		}
		return splitLines(data, budget, limit, nil)
	case "langsmith":
		return splitLines(data, budget, limit, groupByKey(langsmithTraceID))
	case "otel":
		if firstNonSpace(data) == '{' && bytes.Count(bytes.TrimSpace(data), []byte{'\n'}) > 0 {
			return splitLines(data, budget, limit, groupByKey(otelTraceIDs))
		}
	case "langfuse":
		if firstNonSpace(data) == '[' {
			return splitArray(data, budget, limit)
		}
	}
	return nil, &TooLargeError{What: "this " + format + " input", Size: whole, Limit: limit}
}

type line struct {
	no         int
	start, end int // byte range including the LF
}

// grouper returns, for the lines of an input, groups of line indexes that
// must travel together, in input order.
type grouper func(data []byte, ls []line) [][]int

// splitLines packs lines (or groups of lines) into chunks under budget.
func splitLines(data []byte, budget, limit int, group grouper) ([]Chunk, error) {
	var ls []line // the non-blank ones
	no, start := 0, 0
	for l := range bytes.Lines(data) {
		no++
		if len(bytes.TrimSpace(l)) > 0 {
			ls = append(ls, line{no: no, start: start, end: start + len(l)})
		}
		start += len(l)
	}
	var groups [][]int
	if group != nil {
		groups = group(data, ls)
	} else {
		groups = make([][]int, len(ls))
		for i := range ls {
			groups[i] = []int{i}
		}
	}
	var out []Chunk
	var cur Chunk
	curSize := 2 // the quotes
	flush := func() {
		if len(cur.Lines) > 0 {
			out = append(out, cur)
		}
		cur, curSize = Chunk{}, 2
	}
	for _, g := range groups {
		size := 0
		for _, i := range g {
			size += jsonStringLen(data[ls[i].start:ls[i].end]) - 2
		}
		if size+2 > budget {
			what := fmt.Sprintf("line %d", ls[g[0]].no)
			if len(g) > 1 {
				what = fmt.Sprintf("the trace on lines %d…%d", ls[g[0]].no, ls[g[len(g)-1]].no)
			}
			return nil, &TooLargeError{What: what, Size: size + limit - budget, Limit: limit}
		}
		if curSize+size > budget {
			flush()
		}
		for _, i := range g {
			raw := data[ls[i].start:ls[i].end]
			cur.Data = append(cur.Data, raw...)
			if raw[len(raw)-1] != '\n' {
				cur.Data = append(cur.Data, '\n')
			}
			cur.Lines = append(cur.Lines, ls[i].no)
			cur.Bytes += int64(len(raw))
		}
		curSize += size
	}
	flush()
	return out, nil
}

// groupByKey joins lines that share any key (a union-find over keys), so a
// trace whose records are spread over the file stays in one request.
func groupByKey(keys func([]byte) []string) grouper {
	return func(data []byte, ls []line) [][]int {
		parent := make([]int, len(ls))
		for i := range parent {
			parent[i] = i
		}
		find := func(i int) int {
			for parent[i] != i {
				parent[i] = parent[parent[i]]
				i = parent[i]
			}
			return i
		}
		owner := map[string]int{}
		for i, l := range ls {
			for _, k := range keys(data[l.start:l.end]) {
				if j, ok := owner[k]; ok {
					a, b := find(i), find(j)
					parent[max(a, b)] = min(a, b) // the lower root stays the root
				} else {
					owner[k] = i
				}
			}
		}
		idx := map[int]int{}
		var groups [][]int
		for i := range ls {
			r := find(i)
			gi, ok := idx[r]
			if !ok {
				gi = len(groups)
				idx[r] = gi
				groups = append(groups, nil)
			}
			groups[gi] = append(groups[gi], i)
		}
		return groups
	}
}

func langsmithTraceID(raw []byte) []string {
	var r struct {
		TraceID json.RawMessage `json:"trace_id"`
	}
	if json.Unmarshal(raw, &r) != nil || len(r.TraceID) == 0 {
		return nil
	}
	return []string{string(r.TraceID)}
}

var traceIDRe = regexp.MustCompile(`"traceId"\s*:\s*"([^"]*)"`)

func otelTraceIDs(raw []byte) []string {
	var out []string
	for _, m := range traceIDRe.FindAllSubmatch(raw, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// splitArray cuts a JSON array of traces into smaller arrays.
func splitArray(data []byte, budget, limit int) ([]Chunk, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("malformed JSON array: %v", err)
	}
	var out []Chunk
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			c := append(cur, ']')
			out = append(out, Chunk{Data: c, Bytes: int64(len(c))})
		}
		cur = nil
	}
	for i, it := range items {
		size := jsonStringLen(it)
		if size+2 > budget {
			return nil, &TooLargeError{What: fmt.Sprintf("array item %d", i), Size: size + limit - budget, Limit: limit}
		}
		if len(cur) > 0 && jsonStringLen(cur)+size+1 > budget {
			flush()
		}
		if len(cur) == 0 {
			cur = append(cur, '[')
		} else {
			cur = append(cur, ',')
		}
		cur = append(cur, it...)
	}
	flush()
	return out, nil
}

func firstNonSpace(b []byte) byte {
	if b = bytes.TrimLeft(b, " \t\r\n"); len(b) > 0 {
		return b[0]
	}
	return 0
}

// ResolveFormat returns the adapter name for an input: the named format, or
// the detected one for "auto" (with the same adapters the server uses).
func ResolveFormat(name string, data []byte) (string, error) {
	var a formats.Adapter
	var err error
	if name == "" || name == "auto" {
		a, err = formats.DetectFormat(data)
	} else {
		a, err = formats.Lookup(name)
	}
	if err != nil {
		return "", err
	}
	return a.Name(), nil
}
