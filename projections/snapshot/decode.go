package snapshot

import (
	"encoding/json"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/jsonscan"
)

// decodeImported decodes a trace.imported payload. Imports are most of what
// this projection reads, and encoding/json's reflection over them was a
// third of the server's CPU in make bench-ingest; the shape the event store
// gives back is read by the scanner in one pass (platform/jsonscan), and
// anything else goes through encoding/json, which stays the reference for
// what a payload means (TestDecodeImportedMatchesDecode, FuzzDecodeImported).
// The read model has its own (projections/readmodel/decode.go): it keeps
// tool inputs and metadata as raw JSON for jsonb, this one needs them as maps.
func decodeImported(e events.Envelope, p *events.TraceImportedV1) error {
	if decodeImportedFast(e.Payload, p) {
		return nil
	}
	*p = events.TraceImportedV1{}
	return e.DecodeOrFail(p)
}

func decodeImportedFast(b []byte, p *events.TraceImportedV1) bool {
	*p = events.TraceImportedV1{}
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
		case "title_derived":
			return boolean(s, &p.TitleDerived)
		case "metadata":
			return object(s, &p.Metadata)
		case "spans":
			raw, ok := s.Raw()
			return ok && json.Unmarshal(raw, &p.Spans) == nil
		case "steps":
			if s.Null() {
				p.Steps = nil
				return true
			}
			if p.Steps != nil { // a repeated key reuses elements in encoding/json
				return false
			}
			p.Steps = make([]events.StepRecord, 0, 32)
			return s.Array(func() bool {
				var st events.StepRecord
				if !s.Object(func(k []byte) bool { return stepField(s, &st, k) }) {
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

func stepField(s *jsonscan.Scanner, st *events.StepRecord, k []byte) bool {
	switch string(k) {
	case "id":
		return s.Str(&st.ID)
	case "index":
		return s.Int(&st.Index)
	case "role":
		r := string(st.Role)
		ok := s.Str(&r)
		st.Role = domain.Role(r)
		return ok
	case "content":
		return s.Str(&st.Content)
	case "tool_name":
		return s.Str(&st.ToolName)
	case "tool_call_id":
		return s.Str(&st.ToolCallID)
	case "tool_input":
		return object(s, &st.ToolInput)
	case "metadata":
		return object(s, &st.Metadata)
	}
	return false
}

// object decodes the next value into a map as Envelope.Decode does (numbers
// kept as json.Number); a second value for the same key is left to
// encoding/json, which merges the two.
func object(s *jsonscan.Scanner, dst *map[string]any) bool {
	raw, ok := s.Raw()
	if !ok || *dst != nil {
		return false
	}
	return events.Envelope{Payload: raw}.Decode(dst) == nil
}

// boolean reads true, false or null (which leaves dst as it is).
func boolean(s *jsonscan.Scanner, dst *bool) bool {
	raw, ok := s.Raw()
	switch {
	case !ok:
		return false
	case string(raw) == "true":
		*dst = true
	case string(raw) == "false":
		*dst = false
	case string(raw) != "null":
		return false
	}
	return true
}
