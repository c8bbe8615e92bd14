// Package stepscores turns step labels into numbers by fixed rules (spec 001
// "Step scores"), so the same labels always give the same scores and every
// number can be traced to the label behind it: work costs points, answers
// earn points by how the user reacted, credit flows back from a reacted
// answer to the work before it, a task scores its final answer plus its
// work, and the trace scores the mean of its tasks. It is pure: no model is
// asked anything here (the optional quality-check blending of the spec needs
// a grading model and is not part of this policy).
package stepscores

import "github.com/criticml/critic/domain/labels"

// Policy names these rules; it is recorded with every breakdown so a score
// can always be traced to the rules that made it.
const Policy = "step_scores_v1"

// Work costs (spec 001): a lookup, a call that changes something, a question
// to the user; an error and a repeat of an earlier call each cost more.
const (
	CostLookup   = -0.03
	CostChange   = -0.05
	CostQuestion = -0.05
	CostError    = -0.10
	CostRepeat   = -0.10
)

// Credit flows back: an answer the user reacted to passes BackShare × points
// × BackDecay^k to the agent step k places before it in the same task.
const (
	BackShare = 0.3
	BackDecay = 0.8
)

// ReactionPoints is the published table of what an answer earns by the
// user's reaction (labels.Verdict…), from +1.0 (confirmed, no caveats) to
// −1.0 (rejected, stated with confidence). "unclear" and "none" are not in
// it: an answer without a readable reaction earns UnreactedPoints instead
// and passes no credit back.
var ReactionPoints = map[string]float64{
	labels.VerdictConfirmed:          1.0,
	labels.VerdictAccepted:           0.75,
	labels.VerdictAcceptedWithCaveat: 0.5,
	labels.VerdictPartlyRejected:     -0.5,
	labels.VerdictRejected:           -0.75,
	labels.VerdictRejectedConfident:  -1.0,
}

// UnreactedPoints is what an answer nobody reacted to earns, by what the
// answer itself says it achieved. Every value is below the lowest accepted
// reaction (0.5), so an unconfirmed answer never beats an accepted one, and
// answers that report an error or nothing found are below zero.
var UnreactedPoints = map[string]float64{
	labels.OutcomeSolved:   0.25,
	labels.OutcomeNone:     0.25,
	labels.OutcomePartial:  0.1,
	labels.OutcomeNotFound: -0.25,
	labels.OutcomeFailed:   -0.5,
}

// The outcomes of a trace, read from its final answers (not from the score,
// which also carries the cost of the work).
const (
	OutcomeSuccess              = "success"
	OutcomePartialSuccess       = "partial_success"
	OutcomeFailure              = "failure"
	OutcomeInsufficientEvidence = "insufficient_evidence"
)

// SuccessThreshold is the mean final-answer points from which a trace is a
// success (the user accepted its answers); below zero it is a failure.
const SuccessThreshold = 0.5

// Rules a breakdown line can name.
const (
	RuleLookup     = "lookup"
	RuleChange     = "change"
	RuleQuestion   = "question"
	RuleError      = "error"
	RuleRepeat     = "repeat"
	RuleReaction   = "reaction"
	RuleUnreacted  = "unreacted"
	RuleCreditBack = "credit_back"
)
