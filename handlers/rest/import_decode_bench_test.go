package rest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDecodeImportRequest decodes a 1 MiB import body (escaped JSONL in
// one string); the "strict" case is the encoding/json path, the reference.
func BenchmarkDecodeImportRequest(b *testing.B) {
	var lines []string
	for i := 0; len(strings.Join(lines, "\n")) < 1<<20; i++ {
		lines = append(lines, fmt.Sprintf(`{"id":"t%d","steps":[{"role":"user","content":"Refund order %d please, it is \"late\" é"},{"role":"assistant","content":"Done.\nBye"}]}`, i, i))
	}
	body, _ := json.Marshal(map[string]any{"format": "stash", "data": strings.Join(lines, "\n")})
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var req importRequest
			if !decodeImportRequest(body, &req) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("strict", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var req importRequest
			if err := decodeBodyBytes(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
