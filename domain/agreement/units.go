package agreement

import "sort"

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
	for t, vals := range by {
		u := unit{target: t, values: vals}
		for m := range vals {
			u.members = append(u.members, m)
		}
		sort.Strings(u.members)
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].target < out[j].target })
	return out
}

// agree is whether two values are the same judgment.
func agree(a, b float64) bool { return a == b }
