package projections

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/criticml/critic/domain/events"
)

// TestDecodeEnvelopeMatchesUnmarshal: the fast path and json.Unmarshal agree.
func TestDecodeEnvelopeMatchesUnmarshal(t *testing.T) {
	full, _ := json.Marshal(events.Envelope{Seq: 42, ID: "0b8e", Stream: "trace/x", Version: 3, OwnerID: "o", Type: "trace.imported.v1",
		Actor: "user:1", CausationID: "c", CorrelationID: "d", RecordedAt: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
		Payload: json.RawMessage(`{"a":[1,"}\"]",{"b":null}],"c":"\u00e9"}`)})
	for _, raw := range []string{
		string(full),
		`{"seq":1,"id":"a","payload":{"x": "y" , "z": [ ]} , "type":"t"}`,
		` { "seq" : 5 , "payload" : null } `,
		`{"payload":"str","seq":-3}`,
		`{"payload":12.5e3}`,
		`{}`,
		`{"ID":"upper","seq":1}`,
		`{"id":"esc\"aped","seq":1}`,
		`{"id":"é","seq":1}`,
		`{"seq":1.5}`,
		`{"seq":1,"extra":{"n":1}}`,
		`{"seq":1,"recorded_at":"2025-01-02T03:04:05.000000006Z"}`,
		`{"seq":1,"id":null}`,
	} {
		var fast, slow events.Envelope
		ferr := DecodeEnvelope([]byte(raw), &fast)
		serr := json.Unmarshal([]byte(raw), &slow)
		if (ferr == nil) != (serr == nil) {
			t.Fatalf("%s: fast err %v, unmarshal err %v", raw, ferr, serr)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s:\nfast %+v\nslow %+v", raw, fast, slow)
		}
	}
	for _, bad := range []string{`{"seq":1`, `{"seq":1,}`, `[1]`, `{"payload":{"a":1}`, `{"seq":1} x`} {
		var e events.Envelope
		if DecodeEnvelope([]byte(bad), &e) == nil {
			t.Fatalf("%s: decoded without error", bad)
		}
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte(`{"seq":1,"id":"a","stream":"s","version":2,"owner_id":"o","type":"t","actor":"x","recorded_at":"2025-01-02T03:04:05Z","payload":{"a":[1,"}"]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var fast, slow events.Envelope
		ferr := DecodeEnvelope(raw, &fast)
		serr := json.Unmarshal(raw, &slow)
		if serr != nil {
			return // the payload's validity is checked where it is decoded
		}
		if ferr != nil || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v (%v)\nslow %+v", raw, fast, ferr, slow)
		}
	})
}
