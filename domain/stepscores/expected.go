package stepscores

import "math"

// CreditMethod names how ExpectedCredit is computed; training comparisons
// built from it record it as their credit_method.
const CreditMethod = "probability_weighted_v1"

// CreditLabels are the classifier's five substantive labels and the credit
// each anchors (spec 001 "Automatic action credit").
var CreditLabels = []struct {
	Name   string
	Anchor float64
}{
	{"strongly_negative", -1},
	{"negative", -0.5},
	{"neutral", 0},
	{"positive", 0.5},
	{"strongly_positive", 1},
}

// InsufficientEvidence is the classifier's abstention: its mass is excluded
// from the average rather than counted as neutral.
const InsufficientEvidence = "insufficient_evidence"

// ExpectedCredit is the probability-weighted average of the five anchors,
// divided by the probability the five labels got (insufficient_evidence is
// left out). A malformed distribution — an unknown label, a probability that
// is negative, above one or not a number, a total above one, or no mass on
// the five labels — stays unscored (false), as does an empty one.
func ExpectedCredit(p map[string]float64) (float64, bool) {
	const eps = 1e-6
	total, mass, sum := 0.0, 0.0, 0.0
	for k, v := range p {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1+eps {
			return 0, false
		}
		total += v
		if k == InsufficientEvidence {
			continue
		}
		anchor, ok := anchorOf(k)
		if !ok {
			return 0, false
		}
		mass += v
		sum += v * anchor
	}
	if total > 1+eps || mass <= eps {
		return 0, false
	}
	return round(sum / mass), true
}

func anchorOf(label string) (float64, bool) {
	for _, c := range CreditLabels {
		if c.Name == label {
			return c.Anchor, true
		}
	}
	return 0, false
}
