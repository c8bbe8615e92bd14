package labels

import (
	"encoding/json"
	"testing"

	"github.com/criticml/critic/domain"
)

// FuzzParseValidate: any bytes as a label (what a model or an import may
// send) either fail to parse, fail validation with an error, or validate —
// never panic — and a label that validates re-encodes to one that parses
// and validates again.
func FuzzParseValidate(f *testing.F) {
	for _, l := range []Label{userLabel(), agentLabel(), toolLabel()} {
		b, _ := json.Marshal(strictJSON(l))
		f.Add(b)
	}
	f.Add([]byte(`{"chunk_id":"x","task_id":"t","actor":"user","verdict_target":""}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		l, err := Parse(raw)
		if err != nil {
			return
		}
		if Validate(l, known, map[string]bool{"u0": true, "a0": true}) != nil {
			return
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(b)
		if err != nil {
			t.Fatalf("a valid label does not re-parse: %v", err)
		}
		if err := Validate(again, known, map[string]bool{"u0": true, "a0": true}); err != nil {
			t.Fatalf("a valid label does not re-validate: %v", err)
		}
	})
}

// FuzzChunks: chunking any step sequence covers every non-system step
// exactly once, with distinct ids.
func FuzzChunks(f *testing.F) {
	f.Add([]byte("uacrtaxr"), "id")
	f.Fuzz(func(t *testing.T, shape []byte, callID string) {
		var steps []domain.Step
		for i, c := range shape {
			switch c % 5 {
			case 0:
				steps = append(steps, domain.Step{Role: domain.RoleUser, Content: string(rune('a' + i%3))})
			case 1:
				steps = append(steps, domain.Step{Role: domain.RoleAssistant, Content: "x"})
			case 2:
				steps = append(steps, domain.Step{Role: domain.RoleAssistant, ToolName: "t", ToolCallID: callID[:min(len(callID), i%3)]})
			case 3:
				steps = append(steps, domain.Step{Role: domain.RoleTool, Content: "r", ToolCallID: callID[:min(len(callID), i%3)]})
			default:
				steps = append(steps, domain.Step{Role: domain.RoleSystem})
			}
		}
		seen := map[int]int{}
		ids := map[string]bool{}
		for _, c := range Chunks(steps) {
			if ids[c.ID] {
				t.Fatalf("duplicate chunk id %s", c.ID)
			}
			ids[c.ID] = true
			for _, s := range c.Steps {
				seen[s]++
			}
		}
		for i, s := range steps {
			want := 1
			if s.Role == domain.RoleSystem {
				want = 0
			}
			if seen[i] != want {
				t.Fatalf("step %d (%s) is in %d chunks", i, s.Role, seen[i])
			}
		}
	})
}
