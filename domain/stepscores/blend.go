package stepscores

import (
	"maps"
	"math"

	"github.com/criticml/critic/domain/labels"
)

// Quality checks (spec 001 "Step scores", optional): where the labels leave
// a step's outcome open — a tool call, a question to the user, an answer the
// user never reacted to — a grading model is asked one multiple-choice
// question about that step, and the options' points are blended by the
// probabilities the model gave them. The options' points are fixed here, so
// the bounds hold whatever a model answers: blended work is never above
// zero, and a blended unreacted answer stays below the lowest accepted
// reaction. Steps the labels already decide (an answer the user reacted to)
// are never checked, and nothing flows back from a check.

// CheckPolicy names the questions and their points; it is recorded on every
// check and joined to Policy in a breakdown a check changed.
const CheckPolicy = "quality_check_v1"

// RuleQualityCheck is the breakdown line a check adds (work) or the line
// that replaces the unreacted rule (answers).
const RuleQualityCheck = "quality_check"

// The questions a step can be asked: one for work, one for answers.
const (
	QuestionWork   = "work_v1"
	QuestionAnswer = "answer_v1"
)

// Option is one choice of a quality-check question and its points.
type Option struct {
	ID     string  `json:"id"`
	Text   string  `json:"text"`
	Points float64 `json:"points"`
}

// Question is a multiple-choice question a grading model answers about one
// step, with its options in the order they are shown and blended.
type Question struct {
	ID      string   `json:"id"`
	Text    string   `json:"text"`
	Options []Option `json:"options"`
}

// UnreactedCeiling is the most a checked unreacted answer can earn: below
// the lowest accepted reaction (accepted_with_caveat, 0.5), so an
// unconfirmed answer never beats an accepted one.
const UnreactedCeiling = 0.45

// WorkQuestion asks whether a tool call or question advanced the task. Its
// points are added to the step's work cost and are never above zero, so
// work is never scored above zero: a check can only say a step cost more.
var WorkQuestion = Question{ID: QuestionWork,
	Text: "Looking only at the conversation up to and including the target step, how did this step serve the user's request?",
	Options: []Option{
		{ID: "advanced", Text: "It was a needed step that moved the request forward.", Points: 0},
		{ID: "unneeded", Text: "It was not needed: it added nothing the agent used.", Points: -0.05},
		{ID: "misdirected", Text: "It went the wrong way: wrong target, wrong data, or it made the task harder.", Points: -0.1},
		{ID: "harmful", Text: "It did damage: it changed something it should not have or misled the user.", Points: -0.2},
	}}

// AnswerQuestion asks how well an answer nobody reacted to served the
// request. Its blend replaces the unreacted rule's points; the best option
// is UnreactedCeiling.
var AnswerQuestion = Question{ID: QuestionAnswer,
	Text: "Nobody reacted to the target answer. How well does it serve the user's request?",
	Options: []Option{
		{ID: "solves", Text: "It correctly and fully answers the request.", Points: UnreactedCeiling},
		{ID: "partly", Text: "It helps, but leaves part of the request open or has a flaw.", Points: 0.1},
		{ID: "does_not", Text: "It does not answer the request (nothing found, off-topic, a non-answer).", Points: -0.25},
		{ID: "wrong", Text: "It is wrong or misleading.", Points: -0.5},
	}}

// QuestionFor is the question to ask about a labeled agent step, and
// whether the step is open at all. reacted says the user reacted to it
// (known only to the scorer; an answer with a reaction is never open).
func QuestionFor(l labels.Label, reacted bool) (Question, bool) {
	if l.Actor != labels.ActorAgent {
		return Question{}, false
	}
	if l.IsAnswer() {
		if reacted {
			return Question{}, false
		}
		return AnswerQuestion, true
	}
	if l.Type == labels.TypeToolCall || l.Type == labels.TypeQuestion {
		return WorkQuestion, true
	}
	return Question{}, false
}

// OpenSteps are the chunks of a labeled trace that a quality check may ask
// about, with their questions, in trace order: the steps whose outcome the
// labels leave open. A grader asks exactly these.
func OpenSteps(ls []*labels.Label) map[string]Question {
	reacted := reactions(ls)
	out := map[string]Question{}
	for i, l := range ls {
		if l == nil {
			continue
		}
		_, r := reacted[i]
		if q, ok := QuestionFor(*l, r); ok {
			out[l.ChunkID] = q
		}
	}
	return out
}

// Check is a grading model's answer to a step's question: the probability
// of each option, by option id. Model names who answered (provenance).
type Check struct {
	ChunkID       string             `json:"chunk_id"`
	Question      string             `json:"question"`
	Probabilities map[string]float64 `json:"probabilities"`
	Model         string             `json:"model,omitempty"`
}

// CheckResult is what a check did to a step: shown in its breakdown.
type CheckResult struct {
	Policy        string             `json:"policy"`
	Question      string             `json:"question"`
	Model         string             `json:"model,omitempty"`
	Probabilities map[string]float64 `json:"probabilities"`
	// Points is the blend: Σ p·points / Σ p over the options.
	Points float64 `json:"points"`
}

// Blend is the probability-weighted points of q's options. A distribution
// that is malformed — a missing or unknown option, a probability that is
// negative, above one or not a number, a total that is not one (±0.02) —
// is not used (false): a step is never scored from a garbled answer. The
// sum runs in the question's option order, so the same probabilities give
// the same number on every machine.
func Blend(q Question, p map[string]float64) (float64, bool) {
	const tol = 0.02
	if len(p) != len(q.Options) {
		return 0, false
	}
	total, sum := 0.0, 0.0
	for _, o := range q.Options {
		v, ok := p[o.ID]
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1+1e-9 {
			return 0, false
		}
		total += v
		sum += v * o.Points
	}
	if math.Abs(total-1) > tol {
		return 0, false
	}
	return round(sum / total), true
}

// applyCheck changes a step's own lines by its check, when the check asks
// the question the step is open to and its distribution is well formed.
// It returns whether it did.
func applyCheck(r *StepReward, l labels.Label, reacted bool, c Check) bool {
	q, open := QuestionFor(l, reacted)
	if !open || c.Question != q.ID {
		return false
	}
	pts, ok := Blend(q, c.Probabilities)
	if !ok {
		return false
	}
	r.QualityCheck = &CheckResult{Policy: CheckPolicy, Question: q.ID, Model: c.Model, Probabilities: maps.Clone(c.Probabilities), Points: pts}
	line := Line{Rule: RuleQualityCheck, Value: q.ID, Points: pts}
	if r.Kind == "answer" {
		// The blend replaces what the label's outcome alone would earn;
		// the ceiling holds even if the option table were edited wrongly.
		line.Points = math.Min(pts, UnreactedCeiling)
		for k := range r.Lines {
			if r.Lines[k].Rule == RuleUnreacted {
				r.Lines[k] = line
			}
		}
		return true
	}
	line.Points = math.Min(pts, 0)
	r.Lines = append(r.Lines, line)
	return true
}
