// Package comparisons holds the rules of reviewed comparisons (spec 002 "The
// shared evaluator"): a person is shown the original action and an
// AI-generated alternative for the same prior context, left and right in an
// order seeded per reviewer and finding, and picks one or a tie. A decided
// comparison is a preference pair with full provenance; a tie is recorded
// but makes no pair.
package comparisons

import (
	"strings"
	"unicode/utf8"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
)

// MaxComment bounds a reviewer's comment, like annotation comments.
const MaxComment = 10000

// OriginalLeft decides, seeded by reviewer and finding, whether the reviewer
// sees the original action on the left: position bias cannot favour either
// side, the queue shows the same order every time it is asked, and the
// order is recorded with the verdict.
func OriginalLeft(reviewerID, findingID string) bool {
	rng := domain.SplitMix64{State: domain.Seed(reviewerID, findingID, "comparison")}
	return rng.Next()&1 == 0
}

// Sides returns left and right for a reviewer and finding.
func Sides(reviewerID, findingID, original, alternative string) (left, right events.ComparisonSide) {
	o := events.ComparisonSide{Kind: events.SideOriginal, Action: original}
	a := events.ComparisonSide{Kind: events.SideAlternative, Action: alternative}
	if OriginalLeft(reviewerID, findingID) {
		return o, a
	}
	return a, o
}

// Verdict is what a reviewer sent.
type Verdict struct {
	// Left is the kind the reviewer says was on the left, so a verdict on a
	// stale or tampered presentation is refused instead of misrecorded.
	Left    string
	Choice  string
	Comment *string
}

// Decide checks a verdict against the presentation and returns the choice's
// preferred kind (original, alternative or tie).
func Decide(left, right events.ComparisonSide, v Verdict) (string, error) {
	if v.Left != left.Kind && v.Left != right.Kind {
		a, b := left.Kind, right.Kind
		if a > b {
			a, b = b, a
		}
		return "", domain.InvalidField("left", "left must be "+a+" or "+b+" (as the queue presented it)")
	}
	if v.Left != left.Kind {
		return "", domain.InvalidField("left",
			"this comparison shows the "+left.Kind+" action on the left; answer the presentation the queue gave")
	}
	if v.Comment != nil {
		c := strings.TrimSpace(*v.Comment)
		if utf8.RuneCountInString(c) > MaxComment {
			return "", domain.InvalidField("comment", "comment must be at most 10000 characters")
		}
	}
	switch v.Choice {
	case events.ChoiceLeft:
		return left.Kind, nil
	case events.ChoiceRight:
		return right.Kind, nil
	case events.ChoiceTie:
		return events.ChoiceTie, nil
	}
	return "", domain.InvalidField("choice", "choice must be left, right or tie")
}

// Pair is a reviewed comparison's preference pair (context followed by each
// action, as a step target renders); ok is false for a tie.
func Pair(c events.ComparisonReviewedV1) (chosen, rejected string, ok bool) {
	var win, lose string
	switch c.Choice {
	case events.ChoiceLeft:
		win, lose = c.Left.Action, c.Right.Action
	case events.ChoiceRight:
		win, lose = c.Right.Action, c.Left.Action
	default:
		return "", "", false
	}
	with := func(a string) string {
		if c.Context == "" {
			return a
		}
		return c.Context + "\n" + a
	}
	return with(win), with(lose), true
}

// Reviewable reports whether a finding offers a comparison: it proposed an
// alternative different from the action, and its evidence was not refused
// (a forged or disallowed quote is not worth a person's time).
func Reviewable(f events.Finding) bool {
	if f.AlternativeAction == nil || strings.TrimSpace(*f.AlternativeAction) == "" || *f.AlternativeAction == f.OriginalAction {
		return false
	}
	switch f.Outcome {
	case events.OutcomeInvalidEvidence, events.OutcomeInvalidAlternative, events.OutcomeNoAlternative:
		return false
	}
	return true
}
