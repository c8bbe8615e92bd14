package relay

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/criticml/critic/domain/events"
)

// BenchmarkMessage encodes a 20-step import as a bus message; "marshal" is
// encoding/json on the same envelope, the reference.
func BenchmarkMessage(b *testing.B) {
	var steps []string
	for i := range 20 {
		steps = append(steps, fmt.Sprintf(`{"id":"s%d","index":%d,"role":"assistant","content":"step %d says \"hello\""}`, i, i, i))
	}
	e := events.Envelope{Seq: 123456, ID: "0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a8b", Stream: "trace/0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a8c",
		Version: 1, OwnerID: "0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a8d", Type: events.TraceImported, Actor: "user:0199a3c4",
		CausationID: "c", CorrelationID: "d", RecordedAt: time.Now().UTC(), Payload: json.RawMessage(`{"steps":[` + strings.Join(steps, ",") + `]}`)}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, err := Message(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
