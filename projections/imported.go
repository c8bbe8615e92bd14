package projections

import (
	"encoding/json"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/jsonscan"
)

// ImportedHeader is what every projection reads alike from a trace.imported
// payload (events.TraceImportedV1 less its steps, which each projection keeps
// in its own form, and title_derived, which none of them reads). A
// projection's payload type embeds it beside its own Steps field.
type ImportedHeader struct {
	TraceID      string         `json:"trace_id"`
	ExternalID   string         `json:"external_id"`
	Title        string         `json:"title"`
	SourceFormat string         `json:"source_format"`
	SourceID     string         `json:"source_id"`
	Metadata     map[string]any `json:"metadata"`
	Revision     int            `json:"revision"`
	Spans        []domain.Span  `json:"spans"`
}

// DecodeImported decodes a trace.imported payload into p: the shape the
// event store gives back in one pass through fast (ScanImported), anything
// else (unknown or differently cased keys, numbers that are not plain
// integers, malformed JSON) through encoding/json, which stays the reference
// for what a payload means (each caller's TestDecodeImportedMatchesDecode
// and FuzzDecodeImported).
func DecodeImported[T any](e events.Envelope, p *T, fast func([]byte, *T) bool) error {
	if fast(e.Payload, p) {
		return nil
	}
	*p = *new(T)
	return e.DecodeOrFail(p)
}

// ScanImported reads a trace.imported payload in one pass (platform/jsonscan),
// the header into h and each step into *steps through field, which reads
// one key of a step. It reports false the moment it meets anything it would
// not decode exactly as encoding/json decodes the embedding type (an unknown
// key, a repeated array or map, malformed input): the caller then decodes
// the payload with encoding/json, which stays the reference (each caller
// keeps a differential test and a fuzz target). Imports are most of what
// the projections read; reflection over them was a third of the server's
// CPU in make bench-ingest.
func ScanImported[S any](b []byte, h *ImportedHeader, steps *[]S, field func(st *S, s *jsonscan.Scanner, key []byte) bool) bool {
	s := jsonscan.New(b)
	ok := s.Object(func(k []byte) bool {
		switch string(k) {
		case "trace_id":
			return s.Str(&h.TraceID)
		case "external_id":
			return s.Str(&h.ExternalID)
		case "title":
			return s.Str(&h.Title)
		case "source_format":
			return s.Str(&h.SourceFormat)
		case "source_id":
			return s.Str(&h.SourceID)
		case "revision":
			return s.Int(&h.Revision)
		case "metadata":
			return ScanMap(s, &h.Metadata)
		case "spans":
			raw, ok := s.Raw()
			return ok && json.Unmarshal(raw, &h.Spans) == nil
		case "title_derived":
			// Written on every untitled import and read by none of the
			// projections (the title is taken as it is); without this case
			// each of those payloads was scanned and then decoded again.
			raw, ok := s.Raw()
			return ok && json.Valid(raw)
		case "steps":
			if s.Null() {
				*steps = nil
				return true
			}
			if *steps != nil { // a repeated key reuses elements in encoding/json
				return false
			}
			*steps = make([]S, 0, 32)
			return s.Array(func() bool {
				var st S
				if !s.Object(func(k []byte) bool { return field(&st, s, k) }) {
					return false
				}
				*steps = append(*steps, st)
				return true
			})
		}
		return false // a key this path does not know: encoding/json decides
	})
	return ok && s.End()
}

// ScanMap decodes the next value into a map as events.Envelope.Decode does
// (numbers kept as json.Number); a second value for a map already set is
// left to encoding/json, which merges the two.
func ScanMap(s *jsonscan.Scanner, dst *map[string]any) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	raw, ok := s.Raw()
	if !ok || *dst != nil {
		return false
	}
	return events.Envelope{Payload: raw}.Decode(dst) == nil
}
