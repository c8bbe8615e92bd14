package feedback

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// FindingID is deterministic, so the same judgment has the same id wherever
// it is recorded or reused.
func FindingID(t Target, source, model, configHash string) string {
	return fmt.Sprintf("f_%016x", domain.Seed(t.TraceID, strconv.Itoa(t.Revision), t.StepID, source, model, PromptVersion, configHash))
}

func base(t Target, source, model, configHash string) events.Finding {
	return events.Finding{ID: FindingID(t, source, model, configHash), TraceID: t.TraceID, StepIndex: t.StepIndex, StepID: t.StepID,
		ToolName: t.ToolName, Source: source, ClassifierModel: model, PromptVersion: PromptVersion, OriginalAction: t.Action}
}

// FromFeedback checks a feedback answer against the source and returns its
// finding. review is true when the finding passed every check and its
// comparison now needs the independent review; otherwise Outcome says why
// it makes no pair. decisive is true when the human feedback settled the
// action (a high-confidence verdict on the agent with a verified quote), so
// no AI judgment is asked for.
func FromFeedback(t Target, a FeedbackAnswer, model, configHash string) (f events.Finding, review, decisive bool) {
	f = base(t, events.FindingUserFeedback, model, configHash)
	f.Label, f.Confidence, f.Reason = a.Label, a.Confidence, a.Reason
	switch {
	case a.Label == LabelUnclear:
		f.Outcome = events.OutcomeAbstained
		return f, false, false
	case a.About != "agent":
		f.Outcome = events.OutcomeNotAboutAgent
		f.Reason = fmt.Sprintf("not feedback on the agent (about %s): %s", a.About, a.Reason)
		return f, false, false
	}
	f.EvidenceID, f.EvidenceQuote = a.EvidenceID, a.EvidenceQuote
	if msg := checkQuote(t, a.EvidenceID, a.EvidenceQuote); msg != "" {
		f.Outcome = events.OutcomeInvalidEvidence
		f.Reason = "rejected: " + msg + " (" + a.Reason + ")"
		return f, false, false
	}
	if a.Confidence != High {
		f.Outcome = events.OutcomeLowConfidence
		return f, false, false
	}
	return withAlternative(t, f, a.Alternative)
}

// FromJudgment returns an AI judgment's finding; its evidence is the
// code-selected excerpt of the action, and its reason records the sampled
// criteria.
func FromJudgment(t Target, a JudgmentAnswer, criteria []string, model, configHash string) (f events.Finding, review bool) {
	f = base(t, events.FindingAIJudgment, model, configHash)
	f.Label, f.Confidence, f.Criteria = a.Label, a.Confidence, criteria
	id, quote := "step:"+t.StepID, t.Excerpt()
	f.EvidenceID, f.EvidenceQuote = &id, &quote
	f.Reason = a.Reason + " [criteria: " + strings.Join(shortCriteria(criteria), ", ") + "]"
	switch {
	case a.Label == LabelUnclear:
		f.Outcome = events.OutcomeAbstained
		return f, false
	case a.Confidence != High:
		f.Outcome = events.OutcomeLowConfidence
		return f, false
	}
	f, review, _ = withAlternative(t, f, a.Alternative)
	return f, review
}

func shortCriteria(cs []string) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		name, _, _ := strings.Cut(c, ":")
		out[i] = strings.TrimSpace(name)
	}
	return out
}

func withAlternative(t Target, f events.Finding, alt *string) (events.Finding, bool, bool) {
	if alt == nil || strings.TrimSpace(*alt) == "" {
		f.Outcome = events.OutcomeNoAlternative
		return f, false, true
	}
	rendered, msg := RenderAlternative(t, *alt)
	if msg != "" {
		f.Outcome = events.OutcomeInvalidAlternative
		f.Reason += " (alternative rejected: " + msg + ")"
		return f, false, true
	}
	f.AlternativeAction = &rendered
	return f, true, true
}

// checkQuote: the cited evidence must be one the target allows and the quote
// must occur in it verbatim.
func checkQuote(t Target, id, quote *string) string {
	if id == nil || *id == "" {
		return "no evidence cited"
	}
	e, ok := t.evidence(*id)
	if !ok {
		return fmt.Sprintf("evidence %q is not a later user message or a comment on this step", *id)
	}
	if quote == nil || strings.TrimSpace(*quote) == "" {
		return "no quote given"
	}
	if !strings.Contains(e.Text, *quote) {
		return fmt.Sprintf("the quote %q does not occur verbatim in %s", truncate(*quote, 80), *id)
	}
	return ""
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// ToolRevision is a tool-call alternative.
type ToolRevision struct {
	ToolName  string         `json:"tool_name"`
	ToolInput map[string]any `json:"tool_input"`
	Content   string         `json:"content"`
}

// RenderAlternative renders an alternative as the action the reward model
// would read, or says why it cannot be one: a text alternative must differ
// from the original; a tool-call alternative must be the JSON of a
// ToolRevision that changes the tool or its arguments.
func RenderAlternative(t Target, alt string) (string, string) {
	step := domain.PairStep{Role: domain.RoleAssistant}
	if t.IsToolCall {
		dec := json.NewDecoder(strings.NewReader(alt))
		dec.DisallowUnknownFields()
		var rev ToolRevision
		if err := dec.Decode(&rev); err != nil || dec.More() {
			return "", "a tool-call alternative must be a JSON object {tool_name, tool_input, content}"
		}
		if strings.TrimSpace(rev.ToolName) == "" {
			return "", "the tool-call alternative has no tool_name"
		}
		if rev.ToolInput == nil {
			rev.ToolInput = map[string]any{}
		}
		orig := t.ToolInput
		if orig == nil {
			orig = map[string]any{}
		}
		if rev.ToolName == t.ToolName && reflect.DeepEqual(normalize(rev.ToolInput), normalize(orig)) {
			return "", "the tool-call alternative changes neither the tool nor its arguments"
		}
		step.ToolName, step.ToolInput, step.Content = rev.ToolName, rev.ToolInput, rev.Content
	} else {
		if strings.TrimSpace(alt) == strings.TrimSpace(t.Content) {
			return "", "the alternative is the original response"
		}
		step.Content = alt
	}
	return domain.RenderUpTo([]domain.PairStep{step}, 0), ""
}

// normalize round-trips through JSON so numbers compare alike.
func normalize(m map[string]any) any {
	raw, _ := json.Marshal(m)
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	_ = d.Decode(&v)
	return v
}

// ApplyReview records the independent review: the finding makes a pair only
// when the reviewer preferred the side the finding prefers (the alternative
// for a negative finding, the original for a positive one) and found it
// grounded. Ties and reversed preferences are excluded.
func ApplyReview(f *events.Finding, t Target, a ReviewAnswer) {
	r := &events.FindingReview{Grounded: a.Grounded, Reason: a.Reason, Preferred: "tie"}
	origFirst := OriginalFirst(t.TraceID, t.StepID)
	switch {
	case a.Preferred == "A" && origFirst, a.Preferred == "B" && !origFirst:
		r.Preferred = "original"
	case a.Preferred == "A" || a.Preferred == "B":
		r.Preferred = "alternative"
	}
	want := "alternative"
	if f.Label == LabelPositive {
		want = "original"
	}
	r.Passed = r.Grounded && r.Preferred == want
	f.Review = r
	if r.Passed {
		f.Outcome = events.OutcomePair
	} else {
		f.Outcome = events.OutcomeReviewRejected
	}
}

// ReviewFailed records a review call that failed: the finding stays in the
// report and makes no pair.
func ReviewFailed(f *events.Finding, msg string) {
	f.Outcome = events.OutcomeReviewFailed
	f.Review = &events.FindingReview{Preferred: "tie", Reason: "review call failed: " + truncate(msg, 300)}
}

// Validate re-checks a reported finding against the source (the worker
// service runs it on every report): the target must be this trace's
// assistant action at that index, human evidence must be allowed and quoted
// verbatim, and a pair-making finding must carry a reviewed, valid
// alternative.
func Validate(t Target, f events.Finding) error {
	if f.TraceID != t.TraceID || f.StepIndex != t.StepIndex || f.StepID != t.StepID {
		return fmt.Errorf("finding %s: step %d (%s) is not this target", f.ID, f.StepIndex, f.StepID)
	}
	switch f.Label {
	case LabelPositive, LabelNegative, LabelUnclear:
	default:
		return fmt.Errorf("finding %s: label %q is not positive, negative or unclear", f.ID, f.Label)
	}
	switch f.Confidence {
	case High, Low:
	default:
		return fmt.Errorf("finding %s: confidence %q is not high or low", f.ID, f.Confidence)
	}
	if f.Source != events.FindingUserFeedback && f.Source != events.FindingAIJudgment {
		return fmt.Errorf("finding %s: source %q is not user_feedback or ai_judgment", f.ID, f.Source)
	}
	if f.OriginalAction != t.Action {
		return fmt.Errorf("finding %s: original_action is not the step's current action", f.ID)
	}
	if f.Outcome != events.OutcomePair {
		return nil
	}
	if f.Label == LabelUnclear || f.Confidence != High {
		return fmt.Errorf("finding %s: only high-confidence positive or negative findings make pairs", f.ID)
	}
	if f.Source == events.FindingUserFeedback {
		if msg := checkQuote(t, f.EvidenceID, f.EvidenceQuote); msg != "" {
			return fmt.Errorf("finding %s: %s", f.ID, msg)
		}
	}
	if f.AlternativeAction == nil || *f.AlternativeAction == t.Action {
		return fmt.Errorf("finding %s: a pair needs an alternative different from the action", f.ID)
	}
	if f.Review == nil || !f.Review.Passed {
		return fmt.Errorf("finding %s: a pair needs a passed review", f.ID)
	}
	return nil
}

// Pair is a finding's preference pair: the context and the chosen or
// rejected action, ending at the action (never with a later result).
func Pair(t Target, f events.Finding) (chosen, rejected string) {
	orig := RenderWith(t, t.Action)
	alt := RenderWith(t, *f.AlternativeAction)
	if f.Label == LabelPositive {
		return orig, alt
	}
	return alt, orig
}

// RenderWith renders the target's context followed by action, exactly as
// domain.RenderUpTo renders a step target.
func RenderWith(t Target, action string) string {
	if t.Context == "" {
		return action
	}
	return t.Context + "\n" + action
}

// PairV3 is Pair in input version 3's labelled sections.
func PairV3(t Target, f events.Finding) (chosen, rejected string) {
	orig := domain.V3Sections(t.Context, t.Action)
	alt := domain.V3Sections(t.Context, *f.AlternativeAction)
	if f.Label == LabelPositive {
		return orig, alt
	}
	return alt, orig
}
