package agreement

import "sort"

// MemberFigure is one member's agreement with the others and with a
// reward model.
type MemberFigure struct {
	Member string `json:"member"`
	// Judged is how many targets the member judged.
	Judged int `json:"judged"`
	// Consensus: the share of targets where the member's value is the
	// majority value of the other members who judged it. A target judged
	// by nobody else, or whose others tie between values, has no
	// consensus and is not counted.
	Consensus Figure `json:"consensus"`
	// Model: the share of targets the model scored where the member's
	// judgment has the sign of the model's score (nil without a model).
	Model *Figure `json:"model"`
}

// Members gives each member's figures, sorted by member. scores is a
// reward model's score per target (nil: no model); the model prefers a
// target when its score is positive and disprefers it when negative, and
// a member's judgment is its value's sign — give values whose sign is the
// judgment (ratings, criterion weights). A zero on either side is no
// preference and is not counted.
func Members(js []Judgment, scores map[string]float64) []MemberFigure {
	type tally struct{ judged, cAgree, cN, mAgree, mN int }
	by := map[string]*tally{}
	for _, u := range units(js) {
		for _, m := range u.members {
			t := by[m]
			if t == nil {
				t = &tally{}
				by[m] = t
			}
			t.judged++
			v := u.values[m]
			if c, ok := majority(u, m); ok {
				t.cN++
				if agree(v, c) {
					t.cAgree++
				}
			}
			if s, ok := scores[u.target]; ok && s != 0 && v != 0 {
				t.mN++
				if (s > 0) == (v > 0) {
					t.mAgree++
				}
			}
		}
	}
	out := make([]MemberFigure, 0, len(by))
	for m, t := range by {
		f := MemberFigure{Member: m, Judged: t.judged, Consensus: share(t.cAgree, t.cN)}
		if scores != nil {
			f.Model = new(share(t.mAgree, t.mN))
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Member < out[j].Member })
	return out
}

// majority is the most frequent value among u's members other than self;
// ok is false when there are none or the most frequent values tie.
func majority(u unit, self string) (float64, bool) {
	count := map[float64]int{}
	for _, m := range u.members {
		if m != self {
			count[u.values[m]]++
		}
	}
	best, top, tie := 0.0, 0, false
	for v, c := range count {
		switch {
		case c > top:
			best, top, tie = v, c, false
		case c == top:
			tie = true
		}
	}
	return best, top > 0 && !tie
}
