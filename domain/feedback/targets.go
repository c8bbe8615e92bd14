// Package feedback holds the pure rules of feedback extraction (spec 001
// "Personal reward model training"): which assistant actions are assessed,
// what human evidence each may cite, the prompts, how an answer is checked
// against the source, rubric dropout, and how accepted findings become
// preference pairs. The calls themselves run in the worker tier; nothing
// here does I/O, and every choice that looks random is seeded.
package feedback

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/criticml/critic/domain"
)

// PromptVersion names the prompts and rules below. Findings record it, and
// a retry reuses recorded findings only for the same version: change it
// whenever a prompt, schema or check changes what an answer means.
const PromptVersion = "feedback-v1"

// Labels and confidences of a finding.
const (
	LabelPositive = "positive"
	LabelNegative = "negative"
	LabelUnclear  = "unclear"
	High          = "high"
	Low           = "low"
)

// DefaultCriteria are the four criteria of an AI judgment; a request's
// training_config.criteria replaces them.
var DefaultCriteria = []string{
	"task completion: does the action accomplish what the user asked, as far as the context allows",
	"instruction adherence: does it follow the user's and the system's instructions and constraints",
	"evidence grounding: is every claim and argument supported by the context, with nothing invented",
	"appropriate uncertainty: does it ask, hedge or verify where the context leaves things open, and not otherwise",
}

// Comment is an annotation's comment as extraction reads it.
type Comment struct {
	AnnotationID string `json:"annotation_id"`
	StepID       string `json:"step_id"` // "" = the whole trace
	Text         string `json:"text"`
	Flagged      bool   `json:"flagged"` // label_error: excluded from evidence and training
}

// Trace is one selected trace as extraction reads it.
type Trace struct {
	ID       string            `json:"id"`
	Revision int               `json:"revision"`
	Steps    []domain.PairStep `json:"steps"`
	Comments []Comment         `json:"comments"`
	// RatedSteps are steps with a live explicit rating: explicit ratings
	// take precedence over AI judgments at the same scope.
	RatedSteps map[string]bool `json:"rated_steps,omitempty"`
	// HarnessSteps are user steps the agent's harness wrote (slash
	// commands, their output, hook feedback: step metadata.harness): the
	// model saw them, but they are not what the user said, so they are
	// never evidence.
	HarnessSteps map[string]bool `json:"harness_steps,omitempty"`
}

// InputHash identifies what extraction reads of a trace: its revision,
// steps, comments and rated steps. Comments are annotations, not
// revisions, so the revision alone cannot tell a retry that a new comment
// needs reading.
func InputHash(tr Trace) string {
	raw, _ := json.Marshal(tr)
	return fmt.Sprintf("%016x", domain.Seed(string(raw)))
}

// ConfigHash identifies the request settings that change what a judgment
// means (the criteria); recorded findings are reused only under the same.
func ConfigHash(criteria []string) string {
	return fmt.Sprintf("%016x", domain.Seed(append([]string{"criteria"}, criteria...)...))
}

// Evidence kinds.
const (
	EvidenceUserMessage = "user_message"
	EvidenceComment     = "comment"
)

// Evidence is one source a human-feedback finding may cite.
type Evidence struct {
	ID   string // "step:<step id>" or "annotation:<annotation id>"
	Kind string
	Text string
}

// Target is one assistant action to assess, with what code allows it to be
// judged on.
type Target struct {
	TraceID    string
	Revision   int
	StepIndex  int
	StepID     string
	ToolName   string
	ToolInput  map[string]any
	Content    string
	IsToolCall bool
	// Action is the action as rendered for the reward model.
	Action string
	// Context is everything before the action (system steps excluded), as
	// rendered for the reward model: what an AI judgment and every review
	// see.
	Context string
	// Evidence is the human feedback this action may be judged on: later
	// user messages that react to it and comments attached to it.
	Evidence []Evidence
	Rated    bool
}

// Targets lists a trace's assessable actions in step order: every assistant
// response with text and every tool call, including tool calls whose text is
// empty. Tool results, user and system steps are observations, never
// targets.
//
// A user message counts as evidence about the action when it is in the
// first run of user messages after it and no other assistant response with
// text comes in between (tool calls and their results may: a user who
// interrupts a chain of calls reacts to it). Initial requests and earlier
// feedback can therefore never be cited for a later action. A step comment
// is evidence for its own step only; flagged comments are excluded.
func Targets(tr Trace) []Target {
	var out []Target
	for i, st := range tr.Steps {
		if st.Role != domain.RoleAssistant || (st.ToolName == "" && strings.TrimSpace(st.Content) == "") {
			continue
		}
		t := Target{TraceID: tr.ID, Revision: tr.Revision, StepIndex: i, StepID: st.ID, ToolName: st.ToolName,
			ToolInput: st.ToolInput, Content: st.Content, IsToolCall: st.IsToolCall(),
			Action: domain.RenderUpTo([]domain.PairStep{st}, 0), Context: domain.RenderUpTo(tr.Steps, i-1),
			Rated: tr.RatedSteps[st.ID]}
		t.Evidence = append(t.Evidence, laterUserMessages(tr.Steps, i, tr.HarnessSteps)...)
		for _, c := range tr.Comments {
			if c.StepID == st.ID && !c.Flagged && strings.TrimSpace(c.Text) != "" {
				t.Evidence = append(t.Evidence, Evidence{ID: "annotation:" + c.AnnotationID, Kind: EvidenceComment, Text: c.Text})
			}
		}
		out = append(out, t)
	}
	return out
}

func laterUserMessages(steps []domain.PairStep, i int, harness map[string]bool) []Evidence {
	var out []Evidence
	for k := i + 1; k < len(steps); k++ {
		st := steps[k]
		switch {
		case st.Role == domain.RoleUser && harness[st.ID]:
			// Not the user's words; what follows may still be.
		case st.Role == domain.RoleUser:
			out = append(out, Evidence{ID: "step:" + st.ID, Kind: EvidenceUserMessage, Text: st.Content})
		case len(out) > 0:
			return out // the first run of user messages ended
		case st.Role == domain.RoleAssistant && !st.IsToolCall() && strings.TrimSpace(st.Content) != "":
			return nil // another response came first: later messages react to it
		}
	}
	return out
}

// evidence returns the target's evidence with the id, if any.
func (t Target) evidence(id string) (Evidence, bool) {
	if i := slices.IndexFunc(t.Evidence, func(e Evidence) bool { return e.ID == id }); i >= 0 {
		return t.Evidence[i], true
	}
	return Evidence{}, false
}

// Excerpt is the code-selected excerpt an AI judgment cites: the action
// itself (for a tool call its name and arguments), cut to 300 characters.
func (t Target) Excerpt() string {
	s := strings.TrimPrefix(t.Action, "assistant: ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

// SampleCriteria is rubric dropout: for each target, half of the criteria
// (two of the four defaults; at least one) sampled uniformly with a seed
// derived from the trace and step ids, so a retry samples the same ones.
// dropout false keeps all (the evaluation suite).
func SampleCriteria(criteria []string, traceID, stepID string, dropout bool) []string {
	if len(criteria) == 0 {
		criteria = DefaultCriteria
	}
	if !dropout || len(criteria) == 1 {
		return append([]string(nil), criteria...)
	}
	keep := (len(criteria) + 1) / 2
	idx := make([]int, len(criteria))
	for i := range idx {
		idx[i] = i
	}
	rng := domain.SplitMix64{State: domain.Seed(traceID, stepID, "criteria")}
	for i := range keep { // partial Fisher–Yates
		j := i + int(rng.Next()%uint64(len(idx)-i))
		idx[i], idx[j] = idx[j], idx[i]
	}
	chosen := idx[:keep]
	// Keep the rubric's own order so prompts read naturally.
	for i := 1; i < len(chosen); i++ {
		for j := i; j > 0 && chosen[j] < chosen[j-1]; j-- {
			chosen[j], chosen[j-1] = chosen[j-1], chosen[j]
		}
	}
	out := make([]string, keep)
	for i, k := range chosen {
		out[i] = criteria[k]
	}
	return out
}

// OriginalFirst decides, seeded by the target, whether a review sees the
// original action as candidate A, so position bias cannot favour either.
func OriginalFirst(traceID, stepID string) bool {
	rng := domain.SplitMix64{State: domain.Seed(traceID, stepID, "review")}
	return rng.Next()&1 == 0
}
