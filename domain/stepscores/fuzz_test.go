package stepscores

import (
	"math"
	"testing"

	"github.com/criticml/critic/domain/labels"
)

// FuzzScoreBounds: whatever the labels, every step score and task score is
// within −1..+1, work never earns points, and the outcome is one of the four.
func FuzzScoreBounds(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	verdicts := []string{labels.VerdictConfirmed, labels.VerdictAccepted, labels.VerdictAcceptedWithCaveat, labels.VerdictUnclear,
		labels.VerdictPartlyRejected, labels.VerdictRejected, labels.VerdictRejectedConfident, labels.VerdictNone}
	outcomes := []string{labels.OutcomeSolved, labels.OutcomePartial, labels.OutcomeNotFound, labels.OutcomeFailed, labels.OutcomeNone}
	f.Fuzz(func(t *testing.T, shape []byte) {
		var ls []*labels.Label
		for i, b := range shape {
			id := string(rune('a'+i%26)) + string(rune('a'+i/26%26))
			task := string(rune('t' + b%3))
			switch b % 4 {
			case 0:
				ls = append(ls, user(id, task, verdicts[int(b/4)%len(verdicts)], nil))
			case 1:
				ls = append(ls, answer(id, task, outcomes[int(b/4)%len(outcomes)]))
			case 2:
				l := tool(id, task, []string{labels.EffectLookup, labels.EffectChange}[b/4%2], []string{labels.ResultOK, labels.ResultError}[b/8%2])
				if b&64 != 0 && i > 0 {
					prev := ls[i-1].ChunkID
					l.DuplicateOf = &prev
				}
				ls = append(ls, l)
			default:
				ls = append(ls, msg(id, task, []string{labels.TypeQuestion, labels.TypeProgress}[b/4%2]))
			}
		}
		res := score(ls...)
		for _, r := range res.Steps {
			if r == nil {
				continue
			}
			if math.Abs(r.Score) > 1 || (r.Kind == "work" && r.Points > 0) {
				t.Fatalf("out of bounds: %+v", r)
			}
		}
		for _, ts := range res.Tasks {
			if math.Abs(ts.Score) > 1 || ts.Work > 0 {
				t.Fatalf("task out of bounds: %+v", ts)
			}
		}
		switch res.Outcome {
		case OutcomeSuccess, OutcomePartialSuccess, OutcomeFailure, OutcomeInsufficientEvidence:
		default:
			t.Fatalf("outcome %q", res.Outcome)
		}
	})
}
