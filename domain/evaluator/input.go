package evaluator

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
)

// The shared evaluator's input (spec 002 "The shared evaluator"): unlike a
// personal model, it sees the system instructions the agent was given and
// the task/tool context the importer put in metadata.evaluation_context,
// ahead of the action's prior context and the action, rendered as personal
// models render them. Training pairs, benchmark items and automatic scoring
// all go through Input, so the evaluator reads at inference exactly what it
// learned from. The model keeps the last 1024 tokens (left truncation), so
// on a long trace the instructions are what is lost first.
//
//	system: <each system step before the action>
//	evaluation_context: <metadata.evaluation_context: a string as is, else compact JSON>
//	<prior context and action, as domain.RenderUpTo>

// EvaluationContext is a trace's metadata.evaluation_context as the
// evaluator reads it ("" when absent).
func EvaluationContext(s traces.State) string {
	v, ok := s.Metadata["evaluation_context"]
	if !ok || v == nil {
		return ""
	}
	if str, ok := v.(string); ok {
		return strings.TrimSpace(str)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSpace(b.String())
}

// Prefix is what comes before the rendered steps of an input for the step
// at index i: the system steps before it and the evaluation context.
func Prefix(s traces.State, i int) string {
	var b strings.Builder
	for k := 0; k < i && k < len(s.Steps); k++ {
		if st := s.Steps[k]; st.Role == domain.RoleSystem && strings.TrimSpace(st.Content) != "" {
			b.WriteString("system: ")
			b.WriteString(st.Content)
			b.WriteByte('\n')
		}
	}
	if ec := EvaluationContext(s); ec != "" {
		b.WriteString("evaluation_context: ")
		b.WriteString(ec)
		b.WriteByte('\n')
	}
	return b.String()
}

// StepIndex is the index of a step id in s (−1 when absent).
func StepIndex(s traces.State, stepID string) int {
	return slices.IndexFunc(s.Steps, func(st events.StepRecord) bool { return st.ID == stepID })
}

// ActionInput is one action the evaluator scores.
type ActionInput struct {
	StepID string `json:"step_id"`
	Text   string `json:"text"`
}

// ActionInputs are a trace's scorable actions — every assistant response
// and tool call — each with its prior context only (no later tool result
// or reply), in step order.
func ActionInputs(s traces.State) []ActionInput {
	pt := rewardmodels.PairTrace(s)
	out := []ActionInput{}
	for i, st := range pt.Steps {
		if rewardmodels.IsScorableAction(st) {
			out = append(out, ActionInput{StepID: st.ID, Text: Prefix(s, i) + domain.RenderUpTo(pt.Steps, i)})
		}
	}
	return out
}
