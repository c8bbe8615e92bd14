package sections

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/criticml/critic/domain"
)

// The rules below bound what a section assessment or a completion estimate
// may send to a model and what it may answer (spec 001 "Trace sections").
// They are pure so the model-calling side (the LLM layer) and its tests use
// exactly the same evidence and the same checks; nothing here calls a model.

// Versions of the two assessments; a cached assessment of another version
// is stale.
const (
	SectionAssessmentVersion = "section_assessment_v1"
	CompletionVersion        = "completion_v1"
)

// Evidence bounds.
const (
	// MaxRanges is how many ranges one section-summaries request may carry
	// (a transport batch size, not a limit on sections).
	MaxRanges = 4
	// MaxCompletionEvents is how many events a completion estimate sees.
	MaxCompletionEvents = 104
	// PrecedingEvents is how many events before a section give it context.
	PrecedingEvents = 8
	// MaxSectionEvents is how many events inside a section it sees.
	MaxSectionEvents = 64
	// CompletionLease and SectionLease bound how long one generation holds
	// the cache entry against concurrent duplicates.
	CompletionLeaseSeconds = 90
	SectionLeaseSeconds    = 60
)

// Range is a requested section: its first and last step ids, inclusive.
type Range struct {
	FirstStepID string `json:"first_step_id"`
	LastStepID  string `json:"last_step_id"`
}

// Resolved is a Range located in the trace (zero-based step indices).
type Resolved struct {
	Range
	First, Last int
}

// ResolveRanges checks a section-summaries request against the trace: 1–4
// ranges, each naming two steps of this trace in order. ids are the trace's
// step ids in order.
func ResolveRanges(ids []string, ranges []Range) ([]Resolved, error) {
	if len(ranges) < 1 || len(ranges) > MaxRanges {
		return nil, domain.InvalidField("ranges", fmt.Sprintf("send 1 to %d ranges (got %d)", MaxRanges, len(ranges)))
	}
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	out := make([]Resolved, len(ranges))
	for k, r := range ranges {
		field := "ranges[" + strconv.Itoa(k) + "]"
		first, ok := at[r.FirstStepID]
		if !ok {
			return nil, domain.InvalidField(field+".first_step_id", fmt.Sprintf("step %q is not a step of this trace", r.FirstStepID))
		}
		last, ok := at[r.LastStepID]
		if !ok {
			return nil, domain.InvalidField(field+".last_step_id", fmt.Sprintf("step %q is not a step of this trace", r.LastStepID))
		}
		if last < first {
			return nil, domain.InvalidField(field, "last_step_id comes before first_step_id")
		}
		out[k] = Resolved{Range: r, First: first, Last: last}
	}
	return out, nil
}

// CompletionEvidence picks at most MaxCompletionEvents steps for a
// completion estimate, in order: every request and assistant message first
// (evenly thinned only if they alone exceed the budget, requests before
// assistant messages), then evenly spaced tool evidence in what is left.
// System steps are context, not events.
func CompletionEvidence(steps []domain.Step) []int {
	var users, messages, tools []int
	for i, s := range steps {
		switch {
		case s.Role == domain.RoleUser:
			users = append(users, i)
		case s.Role == domain.RoleAssistant && !s.IsToolCall():
			messages = append(messages, i)
		case s.Role == domain.RoleAssistant || s.Role == domain.RoleTool:
			tools = append(tools, i)
		}
	}
	budget := MaxCompletionEvents
	picked := even(users, budget)
	budget -= len(picked)
	m := even(messages, budget)
	budget -= len(m)
	picked = append(picked, m...)
	picked = append(picked, even(tools, budget)...)
	return sorted(picked)
}

// SectionEvidence picks the evidence of one section: up to PrecedingEvents
// non-system steps right before it, and inside it every request and
// progress record plus evenly spaced other events, MaxSectionEvents in all.
func SectionEvidence(steps []domain.Step, first, last int) (preceding, inside []int) {
	for i := first - 1; i >= 0 && len(preceding) < PrecedingEvents; i-- {
		if steps[i].Role != domain.RoleSystem {
			preceding = append([]int{i}, preceding...)
		}
	}
	var keep, rest []int
	for i := first; i <= last && i < len(steps); i++ {
		s := steps[i]
		if _, ok := progressItem(s); s.Role == domain.RoleUser || ok {
			keep = append(keep, i)
		} else if s.Role != domain.RoleSystem {
			rest = append(rest, i)
		}
	}
	keep = even(keep, MaxSectionEvents)
	inside = sorted(append(keep, even(rest, MaxSectionEvents-len(keep))...))
	return preceding, inside
}

// even picks n evenly spaced elements of xs, always keeping the first and
// the last; all of them when n ≥ len(xs).
func even(xs []int, n int) []int {
	if n <= 0 || len(xs) == 0 {
		return nil
	}
	if n >= len(xs) {
		return append([]int(nil), xs...)
	}
	if n == 1 {
		return []int{xs[len(xs)-1]}
	}
	out := make([]int, n)
	for k := range n {
		out[k] = xs[k*(len(xs)-1)/(n-1)]
	}
	return out
}

// sorted is idx in order, without repeats.
func sorted(idx []int) []int {
	out := append([]int{}, idx...)
	slices.Sort(out)
	return slices.Compact(out)
}

// EvidenceHash identifies the evidence an assessment was made from: the
// version and the selected steps' ids, roles, contents and tool calls. A
// cache keyed by it is invalidated exactly when relevant evidence changes,
// and an unchanged trace never triggers generation again.
func EvidenceHash(version string, steps []domain.Step, ids []string, idx ...[]int) string {
	h := sha256.New()
	h.Write([]byte(version))
	for _, group := range idx {
		h.Write([]byte{1})
		for _, i := range group {
			s := steps[i]
			in := domain.CanonicalToolInput(s.ToolInput)
			for _, part := range []string{ids[i], string(s.Role), s.Content, s.ToolName, string(in), s.ToolCallID} {
				h.Write([]byte{0})
				h.Write([]byte(strconv.Itoa(len(part)) + ":" + part))
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Summary is one assessed section of the section-summaries answer. Score
// is a 0–1 estimate of success at the section's local objectives, or nil
// (unscored) with the reason.
type Summary struct {
	FirstStepID string   `json:"first_step_id"`
	LastStepID  string   `json:"last_step_id"`
	Title       *string  `json:"title"`
	Summary     *string  `json:"summary"`
	Objective   *string  `json:"objective"`
	Score       *float64 `json:"score"`
	Reason      *string  `json:"reason"`
}

// Gradable reports whether a range holds agent work (an assistant response
// or a tool call). A range without is context: it is never scored, even if
// an older cached assessment carries a score.
func Gradable(steps []domain.Step, first, last int) bool {
	for i := first; i <= last && i < len(steps); i++ {
		if steps[i].Role == domain.RoleAssistant {
			return true
		}
	}
	return false
}

// ValidateSummaries checks a generated answer against the request: one
// summary per requested range, bound to exactly that range, scores within
// 0–1, and a reason for every score or its absence.
func ValidateSummaries(req []Resolved, got []Summary) error {
	if len(got) != len(req) {
		return fmt.Errorf("sections: %d summaries for %d ranges", len(got), len(req))
	}
	for k, s := range got {
		if s.FirstStepID != req[k].FirstStepID || s.LastStepID != req[k].LastStepID {
			return fmt.Errorf("sections: summary %d is for %s..%s, not the requested %s..%s", k, s.FirstStepID, s.LastStepID, req[k].FirstStepID, req[k].LastStepID)
		}
		if s.Score != nil && !unit(*s.Score) {
			return fmt.Errorf("sections: summary %d score %v is outside 0–1", k, *s.Score)
		}
		if s.Reason == nil || *s.Reason == "" {
			return fmt.Errorf("sections: summary %d has no reason", k)
		}
	}
	return nil
}

// Checkpoint is one point of a completion curve: how far the task had got
// by this step (0–1, nil when the evidence cannot tell).
type Checkpoint struct {
	StepID     string   `json:"step_id"`
	Completion *float64 `json:"completion"`
	Reason     string   `json:"reason"`
}

// CompletionTask is one independent request and its curve.
type CompletionTask struct {
	FirstStepID string       `json:"first_step_id"`
	LastStepID  string       `json:"last_step_id"`
	Objective   *string      `json:"objective"`
	Checkpoints []Checkpoint `json:"checkpoints"`
}

// ValidateCompletion checks a generated estimate against the trace: tasks
// name real steps in order and do not overlap, checkpoints lie inside their
// task in strictly increasing order, completions are within 0–1, and a
// checkpoint at a user message earns no progress (receiving a request is
// not progress): it may not exceed the checkpoint before it. Regressions
// are allowed and the last point need not be 1.
func ValidateCompletion(steps []domain.Step, ids []string, tasks []CompletionTask) error {
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	prevLast := -1
	for k, t := range tasks {
		first, ok1 := at[t.FirstStepID]
		last, ok2 := at[t.LastStepID]
		if !ok1 || !ok2 || last < first {
			return fmt.Errorf("completion: task %d range %s..%s is not a range of this trace", k, t.FirstStepID, t.LastStepID)
		}
		if first <= prevLast {
			return fmt.Errorf("completion: task %d overlaps the task before it", k)
		}
		prevLast = last
		prevStep := -1
		prev := 0.0
		for j, c := range t.Checkpoints {
			i, ok := at[c.StepID]
			if !ok || i < first || i > last {
				return fmt.Errorf("completion: task %d checkpoint %d names step %q outside the task", k, j, c.StepID)
			}
			if i <= prevStep {
				return fmt.Errorf("completion: task %d checkpoints are not in step order", k)
			}
			prevStep = i
			if c.Completion == nil {
				continue
			}
			if !unit(*c.Completion) {
				return fmt.Errorf("completion: task %d checkpoint %d value %v is outside 0–1", k, j, *c.Completion)
			}
			if steps[i].Role == domain.RoleUser && *c.Completion > prev+1e-9 {
				return fmt.Errorf("completion: task %d checkpoint %d gains progress at a user message", k, j)
			}
			prev = *c.Completion
		}
	}
	return nil
}

func unit(x float64) bool { return !math.IsNaN(x) && x >= 0 && x <= 1 }
