package evaluator

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/criticml/critic/domain"
)

// Margins are a model's scores on benchmark items: r(chosen) − r(rejected)
// by item id. An item is correct when its margin is positive; a tie (zero)
// counts half, as a coin flip would.
type Margins map[string]float64

// credit is an item's accuracy credit under m; without a model (no
// incumbent yet) every item is a coin flip: the first release must beat
// chance.
func credit(m Margins, id string) float64 {
	if m == nil {
		return 0.5
	}
	v, ok := m[id]
	switch {
	case !ok || v == 0 || math.IsNaN(v):
		return 0.5
	case v > 0:
		return 1
	}
	return 0
}

// Policy is the release policy.
type Policy struct {
	MinSlice  int     // slices with fewer items cannot block a release
	Tolerance float64 // allowed accuracy drop on a populated slice
	Rounds    int     // paired bootstrap resamples
	Seed      uint64
}

// DefaultPolicy is the policy with spec defaults.
func DefaultPolicy() Policy {
	return Policy{MinSlice: DefaultMinSlice, Tolerance: DefaultTolerance, Rounds: BootstrapRounds, Seed: BootstrapSeed}
}

// Comparison is incumbent against candidate on a set of items.
type Comparison struct {
	Name      string  `json:"name"` // "overall" or "<dimension>=<value>"
	Items     int     `json:"items"`
	Incumbent float64 `json:"incumbent_accuracy"`
	Candidate float64 `json:"candidate_accuracy"`
	// Diff is candidate − incumbent; Low and High its 95% paired bootstrap
	// interval.
	Diff float64 `json:"diff"`
	Low  float64 `json:"diff_low"`
	High float64 `json:"diff_high"`
	// Populated: at least MinSlice items (always true overall).
	Populated bool `json:"populated"`
	// Regressed: populated and Diff < −Tolerance.
	Regressed bool `json:"regressed"`
}

// Report is the gate report of one candidate on one benchmark version.
type Report struct {
	BenchmarkVersion int          `json:"benchmark_version"`
	Overall          Comparison   `json:"overall"`
	Slices           []Comparison `json:"slices"`
	// Pass is the verdict: overall interval above zero and no populated
	// slice regressed. Reasons says why not, one line per failed gate.
	Pass    bool     `json:"pass"`
	Reasons []string `json:"reasons"`
}

// Evaluate applies the gates: the candidate must beat the incumbent overall
// with a paired bootstrap 95% interval of the accuracy difference that
// excludes zero, and no slice with at least MinSlice items may lose more
// than Tolerance. incumbent nil means there is no release yet (chance).
func Evaluate(b Benchmark, incumbent, candidate Margins, p Policy) Report {
	r := Report{BenchmarkVersion: b.Version, Slices: []Comparison{}, Reasons: []string{}}
	all := make([]string, len(b.Items))
	bySlice := map[string][]string{}
	for i, it := range b.Items {
		all[i] = it.ID
		for _, dim := range []string{SliceTool, SliceDomain, SliceAgent} {
			if v := it.Slices[dim]; v != "" {
				k := dim + "=" + v
				bySlice[k] = append(bySlice[k], it.ID)
			}
		}
	}
	r.Overall = compare("overall", all, incumbent, candidate, p)
	r.Overall.Populated = true
	if len(all) == 0 {
		r.Reasons = append(r.Reasons, "the benchmark has no items")
	} else if !(r.Overall.Low > 0) {
		r.Reasons = append(r.Reasons, fmt.Sprintf("overall: the candidate does not beat the incumbent (accuracy %.3f vs %.3f, 95%% interval of the difference [%.3f, %.3f] does not exclude zero)",
			r.Overall.Candidate, r.Overall.Incumbent, r.Overall.Low, r.Overall.High))
	}
	for _, k := range slices.Sorted(maps.Keys(bySlice)) {
		c := compare(k, bySlice[k], incumbent, candidate, p)
		c.Populated = c.Items >= p.MinSlice
		c.Regressed = c.Populated && c.Diff < -p.Tolerance
		if c.Regressed {
			r.Reasons = append(r.Reasons, fmt.Sprintf("slice %s (%d items): accuracy falls from %.3f to %.3f, more than the tolerance %.3f",
				k, c.Items, c.Incumbent, c.Candidate, p.Tolerance))
		}
		r.Slices = append(r.Slices, c)
	}
	r.Pass = len(r.Reasons) == 0
	return r
}

// compare computes both accuracies on ids and the paired bootstrap
// interval of their difference: each resample draws the same items for both
// models, so the interval reflects how they differ on the same data.
func compare(name string, ids []string, inc, cand Margins, p Policy) Comparison {
	c := Comparison{Name: name, Items: len(ids)}
	if len(ids) == 0 {
		return c
	}
	d := make([]float64, len(ids))
	var si, sc float64
	for i, id := range ids {
		a, b := credit(inc, id), credit(cand, id)
		si += a
		sc += b
		d[i] = b - a
	}
	n := float64(len(ids))
	c.Incumbent, c.Candidate = si/n, sc/n
	c.Diff = c.Candidate - c.Incumbent
	rounds := p.Rounds
	if rounds <= 0 {
		rounds = BootstrapRounds
	}
	rng := domain.SplitMix64{State: p.Seed ^ 0x9e3779b97f4a7c15}
	means := make([]float64, rounds)
	for r := range means {
		var s float64
		for range ids {
			s += d[rng.Next()%uint64(len(ids))]
		}
		means[r] = s / n
	}
	sort.Float64s(means)
	c.Low = means[int(0.025*float64(rounds))]
	c.High = means[int(math.Min(float64(rounds-1), 0.975*float64(rounds)))]
	return c
}
