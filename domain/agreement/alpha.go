package agreement

import (
	"cmp"
	"maps"
	"slices"
)

// Metric is δ²(c, k), the squared difference between two values that
// alpha weighs disagreements by.
type Metric func(c, k float64) float64

// Nominal is the metric of categories (a categorical or binary
// criterion's labels): any two different values differ by 1.
func Nominal(c, k float64) float64 {
	if c == k {
		return 0
	}
	return 1
}

// Interval is the metric of numbers (ratings and scale values):
// δ² = (c − k)², so 1 against 5 is a larger disagreement than 4 against 5.
// For ratings, which are only +1 or −1, it gives the same alpha as Nominal.
func Interval(c, k float64) float64 { return (c - k) * (c - k) }

// Alpha is Krippendorff's alpha over the judgments:
//
//	alpha = 1 − D_o / D_e
//
// over the coincidence matrix of pairable values — the values of targets
// judged by m_u ≥ 2 members (a target judged once pairs with nothing and
// is left out):
//
//	o_ck = Σ_u (number of ordered pairs of values c, k in u) / (m_u − 1)
//	n_c  = Σ_k o_ck,   n = Σ_c n_c (the pairable values)
//	D_o  = (1/n)        Σ_c Σ_k o_ck · δ²(c, k)
//	D_e  = (1/(n(n−1))) Σ_c Σ_k n_c · n_k · δ²(c, k)
//
// Use Nominal for categorical labels and Interval for numeric ratings and
// scales. N is the number of co-rated targets (m_u ≥ 2). Value is nil
// when there are no pairable values or D_e = 0 (every value the same:
// no variation, so agreement cannot be told from chance; Krippendorff
// leaves alpha undefined there).
func Alpha(js []Judgment, delta Metric) Figure {
	o := map[[2]float64]float64{}
	co := 0
	for _, u := range units(js) {
		m := len(u.members)
		if m < 2 {
			continue
		}
		co++
		for i, a := range u.members {
			for j, b := range u.members {
				if i != j {
					o[[2]float64{u.values[a], u.values[b]}] += 1 / float64(m-1)
				}
			}
		}
	}
	if co == 0 {
		return figure(nil, 0)
	}
	// Sum in a fixed order: the same input gives the same bits.
	cells := slices.SortedFunc(maps.Keys(o), func(a, b [2]float64) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	nc := map[float64]float64{}
	var n, do float64
	for _, ck := range cells {
		w := o[ck]
		nc[ck[0]] += w
		n += w
		do += w * delta(ck[0], ck[1])
	}
	values := slices.Sorted(maps.Keys(nc))
	var de float64
	for _, c := range values {
		for _, k := range values {
			de += nc[c] * nc[k] * delta(c, k)
		}
	}
	do /= n
	de /= n * (n - 1)
	if de == 0 {
		return figure(nil, co)
	}
	a := 1 - do/de
	return figure(&a, co)
}
