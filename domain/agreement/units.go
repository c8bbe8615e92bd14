package agreement

import (
	"maps"
	"slices"
)

// unit is one target's values, one per member, members sorted.
type unit struct {
	target  string
	members []string
	values  map[string]float64
}

// units groups judgments by target, targets sorted. A member who judged a
// target twice counts once, with the later judgment: one vote per member
// per target, as training counts it.
func units(js []Judgment) []unit {
	by := map[string]map[string]float64{}
	for _, j := range js {
		if by[j.Target] == nil {
			by[j.Target] = map[string]float64{}
		}
		by[j.Target][j.Member] = j.Value
	}
	out := make([]unit, 0, len(by))
	for _, t := range slices.Sorted(maps.Keys(by)) {
		out = append(out, unit{target: t, values: by[t], members: slices.Sorted(maps.Keys(by[t]))})
	}
	return out
}

// agree is whether two values are the same judgment.
func agree(a, b float64) bool { return a == b }
