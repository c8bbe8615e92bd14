package readmodel

import (
	"encoding/json"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/jsonscan"
)

// decodeImported decodes a trace.imported payload. The bulk of an import is
// these payloads, so the shape the event store gives back (known keys, steps
// of strings, integers and raw objects) is read by a small scanner in one
// pass (platform/jsonscan); anything else (unknown or differently cased keys, numbers that are not
// plain integers, malformed JSON) goes through encoding/json as before, which
// stays the reference for what a payload means.
func decodeImported(e events.Envelope, p *importedTrace) error {
	if decodeImportedFast(e.Payload, p) {
		return nil
	}
	*p = importedTrace{}
	return e.DecodeOrFail(p)
}

func decodeImportedFast(b []byte, p *importedTrace) bool {
	*p = importedTrace{}
	s := jsonscan.New(b)
	ok := s.Object(func(k []byte) bool {
		switch string(k) {
		case "trace_id":
			return s.Str(&p.TraceID)
		case "external_id":
			return s.Str(&p.ExternalID)
		case "title":
			return s.Str(&p.Title)
		case "source_format":
			return s.Str(&p.SourceFormat)
		case "source_id":
			return s.Str(&p.SourceID)
		case "revision":
			return s.Int(&p.Revision)
		case "metadata":
			if s.Null() {
				p.Metadata = nil
				return true
			}
			raw, ok := s.Raw()
			if !ok || p.Metadata != nil { // a repeated key merges maps in encoding/json
				return false
			}
			return events.Envelope{Payload: raw}.Decode(&p.Metadata) == nil // json.Number kept, as Decode does
		case "spans":
			raw, ok := s.Raw()
			return ok && json.Unmarshal(raw, &p.Spans) == nil
		case "title_derived":
			// Written on every untitled import; the read model takes the
			// title as it is. Without this case each of those payloads was
			// scanned and then decoded again by encoding/json.
			raw, ok := s.Raw()
			return ok && json.Valid(raw)
		case "steps":
			if s.Null() {
				p.Steps = nil
				return true
			}
			if p.Steps != nil { // a repeated key reuses elements in encoding/json
				return false
			}
			p.Steps = make([]importedStep, 0, 32)
			return s.Array(func() bool {
				var st importedStep
				if !s.Object(func(k []byte) bool { return st.field(s, k) }) {
					return false
				}
				p.Steps = append(p.Steps, st)
				return true
			})
		}
		return false // a key this path does not know: encoding/json decides
	})
	return ok && s.End()
}

func (st *importedStep) field(s *jsonscan.Scanner, k []byte) bool {
	switch string(k) {
	case "id":
		return s.Str(&st.ID)
	case "index":
		return s.Int(&st.Index)
	case "role":
		return s.Str(&st.Role)
	case "content":
		return s.Str(&st.Content)
	case "tool_name":
		return s.Str(&st.ToolName)
	case "tool_call_id":
		return s.Str(&st.ToolCallID)
	case "tool_input":
		raw, ok := s.Raw()
		st.ToolInput = json.RawMessage(raw)
		return ok && json.Valid(raw)
	case "metadata":
		raw, ok := s.Raw()
		st.Metadata = json.RawMessage(raw)
		return ok && json.Valid(raw)
	}
	return false
}
