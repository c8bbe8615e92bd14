// Package agreement measures how far an account's members agree with each
// other, with the consensus and with a reward model (issue 36 "Agreement"):
// a reward model trained on human preferences is only as good as the
// preferences, and disagreement among the people who gave them is the
// first thing to check. It is pure: callers turn annotations into
// Judgments (one per member per target) and read the figures back.
//
// Every figure carries its sample count and is marked TooFew below
// MinSample, so a 100% over three targets is not read as a fact.
package agreement

// MinSample is the fewest samples a figure needs to be trusted: below 10
// co-rated targets (for alpha and pairwise agreement) or 10 compared
// targets (consensus, model), one disagreement moves a share by 10 points
// or more, so the figure is reported but marked too_few.
const MinSample = 10

// Judgment is one member's value for one target (a trace, "trace/step"
// for a step, or any key the caller chooses). Value is a rating (+1 or
// −1), a criterion's numeric value, or a category's code for nominal
// data: the caller maps labels to distinct numbers, and Nominal then only
// compares them for equality.
type Judgment struct {
	Target string  `json:"target"`
	Member string  `json:"member"`
	Value  float64 `json:"value"`
}

// Figure is one agreement number with the count it rests on. Value is nil
// where the number is undefined (nothing to compare, or alpha with no
// variation at all).
type Figure struct {
	Value  *float64 `json:"value"`
	N      int      `json:"n"`
	TooFew bool     `json:"too_few"`
}

func figure(v *float64, n int) Figure {
	return Figure{Value: v, N: n, TooFew: n < MinSample}
}

// share is agree/n as a Figure (nil when n is 0).
func share(agree, n int) Figure {
	if n == 0 {
		return figure(nil, 0)
	}
	v := float64(agree) / float64(n)
	return figure(&v, n)
}
