package events

import "github.com/criticml/critic/domain/stepscores"

// TraceStepsQualityChecked records a grading model's answers to the
// quality-check questions about steps of a trace (spec 001 "Step scores",
// quality checks): for each open step (a tool call, a question, an answer
// nobody reacted to), the probability it gave each option. The step scores
// blend them (stepscores.ScoreWith). A model's answer is a fact: replay and
// audit read these events and never call a model again. Checks are keyed
// by the stable chunk ids of labels.Chunks, so a grown trace keeps them and
// only newly open steps are asked about.
const TraceStepsQualityChecked = "trace.steps_quality_checked.v1"

// TraceStepsQualityCheckedV1 is one batch of checks for the revision the
// grader read.
type TraceStepsQualityCheckedV1 struct {
	TraceID  string `json:"trace_id"`
	Revision int    `json:"revision"`
	// Model and PromptVersion say who answered and how it was asked;
	// Policy is the question set (stepscores.CheckPolicy).
	Model         string             `json:"model"`
	PromptVersion string             `json:"prompt_version"`
	Policy        string             `json:"policy"`
	Checks        []stepscores.Check `json:"checks"`
	InputTokens   int                `json:"input_tokens,omitempty"`
	OutputTokens  int                `json:"output_tokens,omitempty"`
}
