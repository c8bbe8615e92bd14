package readmodel

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/projections"
)

// BenchmarkDecodeImported decodes a 20-step trace.imported payload; the
// "decode" case is encoding/json (Envelope.Decode), the reference.
func BenchmarkDecodeImported(b *testing.B) {
	p := events.TraceImportedV1{TraceID: "0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a8b", Title: "A title", SourceFormat: "stash", Revision: 1,
		Metadata: map[string]any{"agent": "support-bot"}}
	for i := range 20 {
		p.Steps = append(p.Steps, events.StepRecord{ID: fmt.Sprintf("0199a3c4-7e21-7b90-a1d2-3c4d5e6f7a%02d", i), Index: i,
			Step: domain.Step{Role: "assistant", Content: fmt.Sprintf("step %d says \"hello\" to you\nand more é", i),
				ToolName: "lookup", ToolInput: map[string]any{"order_id": "1182"}}})
	}
	raw, _ := json.Marshal(p)
	e := events.Envelope{ID: "x", Type: events.TraceImported, Payload: raw}
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var out importedTrace
			if err := projections.DecodeImported(e, &out, decodeImportedFast); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var out importedTrace
			if err := e.Decode(&out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
