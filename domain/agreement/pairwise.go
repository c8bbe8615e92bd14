package agreement

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// PairFigure is two members' agreement: the share of the targets both
// judged where they gave the same value.
type PairFigure struct {
	A      string `json:"member_a"`
	B      string `json:"member_b"`
	Figure Figure `json:"agreement"`
}

// Pairwise is every pair of members who judged at least one target in
// common, A < B, sorted by A then B. N is the number of co-rated targets.
func Pairwise(js []Judgment) []PairFigure {
	type tally struct{ agree, n int }
	by := map[[2]string]*tally{}
	for _, u := range units(js) {
		for i, a := range u.members {
			for _, b := range u.members[i+1:] {
				k := [2]string{a, b}
				if by[k] == nil {
					by[k] = &tally{}
				}
				by[k].n++
				if agree(u.values[a], u.values[b]) {
					by[k].agree++
				}
			}
		}
	}
	out := make([]PairFigure, 0, len(by))
	for _, k := range slices.SortedFunc(maps.Keys(by), func(a, b [2]string) int {
		return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1]))
	}) {
		out = append(out, PairFigure{A: k[0], B: k[1], Figure: share(by[k].agree, by[k].n)})
	}
	return out
}
