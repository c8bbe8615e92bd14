package projections

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/criticml/critic/domain/events"
)

// BenchmarkDecodeEnvelope decodes a bus message carrying a 20-step import;
// the "unmarshal" case is encoding/json on the same bytes, the reference.
func BenchmarkDecodeEnvelope(b *testing.B) {
	var steps []string
	for i := range 20 {
		steps = append(steps, fmt.Sprintf(`{"id":"0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a%02d","index":%d,"role":"assistant","content":"step %d says \"hello\" to you\nand more"}`, i, i, i))
	}
	raw, _ := json.Marshal(events.Envelope{Seq: 123456, ID: "0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a8b", Stream: "trace/0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a8c",
		Version: 1, OwnerID: "0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a8d", Type: events.TraceImported, Actor: "user:0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a8d",
		CausationID: "0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a8e", CorrelationID: "0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a8e", RecordedAt: time.Now().UTC(),
		Payload: json.RawMessage(`{"trace_id":"t","steps":[` + strings.Join(steps, ",") + `]}`)})
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var e events.Envelope
			if err := DecodeEnvelope(raw, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var e events.Envelope
			if err := json.Unmarshal(raw, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
