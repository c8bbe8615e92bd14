package agreement

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// na marks a missing value in a reliability matrix.
var na = math.NaN()

// krippendorffC is the reliability data of Krippendorff's worked example
// (4 coders × 12 units, with missing values; Krippendorff 2011,
// "Computing Krippendorff's Alpha-Reliability", and Wikipedia): nominal
// alpha 0.743, interval alpha 0.849.
var krippendorffC = [][]float64{
	{1, 2, 3, 3, 2, 1, 4, 1, 2, na, na, na},
	{1, 2, 3, 3, 2, 2, 4, 1, 2, 5, na, 3},
	{na, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, na},
	{1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, na},
}

// judgments turns a coder × unit matrix into judgments: coder i is
// member "m<i>", unit j target "t<jj>".
func judgments(matrix [][]float64) []Judgment {
	var out []Judgment
	for i, row := range matrix {
		for j, v := range row {
			if !math.IsNaN(v) {
				out = append(out, Judgment{Target: fmt.Sprintf("t%02d", j), Member: fmt.Sprintf("m%d", i), Value: v})
			}
		}
	}
	return out
}

// referenceAlpha is alpha written from the pairwise form of the formula
// (not the coincidence matrix the package builds): D_o averages δ² over
// the ordered pairs of values within each unit, weighted 1/(m_u − 1) and
// divided by n; D_e averages δ² over every ordered pair of pairable
// values across all units.
func referenceAlpha(matrix [][]float64, delta func(a, b float64) float64) float64 {
	var pairable []float64
	var do float64
	for j := range matrix[0] {
		var vals []float64
		for i := range matrix {
			if !math.IsNaN(matrix[i][j]) {
				vals = append(vals, matrix[i][j])
			}
		}
		if len(vals) < 2 {
			continue
		}
		pairable = append(pairable, vals...)
		var s float64
		for a := range vals {
			for b := range vals {
				if a != b {
					s += delta(vals[a], vals[b])
				}
			}
		}
		do += s / float64(len(vals)-1)
	}
	n := float64(len(pairable))
	do /= n
	var de float64
	for a := range pairable {
		for b := range pairable {
			if a != b {
				de += delta(pairable[a], pairable[b])
			}
		}
	}
	de /= n * (n - 1)
	return 1 - do/de
}

func TestAlphaKrippendorffExample(t *testing.T) {
	t.Parallel()
	js := judgments(krippendorffC)
	nominal := Alpha(js, Nominal)
	require.NotNil(t, nominal.Value)
	require.InDelta(t, 0.743, *nominal.Value, 0.0005, "Krippendorff's published nominal alpha")
	require.InDelta(t, referenceAlpha(krippendorffC, func(a, b float64) float64 {
		if a == b {
			return 0
		}
		return 1
	}), *nominal.Value, 1e-12)
	require.Equal(t, 11, nominal.N, "unit 12 has one value: 11 co-rated units")
	require.False(t, nominal.TooFew)

	interval := Alpha(js, Interval)
	require.NotNil(t, interval.Value)
	require.InDelta(t, 0.849, *interval.Value, 0.0005, "Krippendorff's published interval alpha")
	require.InDelta(t, referenceAlpha(krippendorffC, func(a, b float64) float64 { return (a - b) * (a - b) }), *interval.Value, 1e-12)
}

func TestAlphaEdgeCases(t *testing.T) {
	t.Parallel()
	// One rater: nothing pairs.
	one := Alpha(judgments([][]float64{{1, -1, 1, 1}}), Interval)
	require.Nil(t, one.Value)
	require.Equal(t, 0, one.N)
	require.True(t, one.TooFew)

	// Nothing co-rated: two raters on different targets.
	apart := Alpha(judgments([][]float64{{1, na, 1}, {na, -1, na}}), Nominal)
	require.Nil(t, apart.Value)
	require.Equal(t, 0, apart.N)

	// All agree, with variation across targets: perfect reliability.
	all := Alpha(judgments([][]float64{{1, -1, 1, -1}, {1, -1, 1, -1}, {1, -1, na, -1}}), Nominal)
	require.NotNil(t, all.Value)
	require.Equal(t, 1.0, *all.Value)
	require.Equal(t, 4, all.N)
	require.True(t, all.TooFew, "4 co-rated targets are below MinSample")

	// All agree on one value everywhere: no variation, alpha undefined.
	same := Alpha(judgments([][]float64{{1, 1, 1}, {1, 1, 1}}), Nominal)
	require.Nil(t, same.Value)
	require.Equal(t, 3, same.N)

	// Systematic disagreement is below chance.
	against := Alpha(judgments([][]float64{{1, -1, 1, -1}, {-1, 1, -1, 1}}), Nominal)
	require.Less(t, *against.Value, 0.0)

	// A member's later judgment of a target replaces the earlier one.
	twice := Alpha([]Judgment{{"a", "x", -1}, {"a", "x", 1}, {"a", "y", 1}, {"b", "x", -1}, {"b", "y", -1}}, Nominal)
	require.Equal(t, 2, twice.N)
	require.InDelta(t, referenceAlpha([][]float64{{1, -1}, {1, -1}}, Nominal), *twice.Value, 1e-12)
}

// team is a fixed labeling: 4 members × 12 targets of ±1 ratings
// (0 = not rated).
var team = [][]float64{
	{1, 1, -1, 1, -1, 1, 1, -1, 1, 1, 0, 1},
	{1, 1, -1, -1, -1, 1, -1, -1, 1, 1, 1, 0},
	{1, -1, -1, 1, -1, 1, 1, 1, 1, -1, 0, 0},
	{0, 1, -1, 1, 1, 1, 1, -1, 0, 1, -1, 0},
}

var modelScores = []float64{0.8, -0.1, -2, 0.3, -0.5, 1.1, 0, -0.7, 0.2, 0.9, 0.4, -0.3}

func teamJudgments() []Judgment {
	m := make([][]float64, len(team))
	for i, row := range team {
		m[i] = make([]float64, len(row))
		for j, v := range row {
			m[i][j] = v
			if v == 0 {
				m[i][j] = na
			}
		}
	}
	return judgments(m)
}

func TestPairwiseMatchesReference(t *testing.T) {
	t.Parallel()
	got := Pairwise(teamJudgments())
	var want []PairFigure
	for a := range team {
		for b := a + 1; b < len(team); b++ {
			n, same := 0, 0
			for j := range team[a] {
				if team[a][j] != 0 && team[b][j] != 0 {
					n++
					if team[a][j] == team[b][j] {
						same++
					}
				}
			}
			v := float64(same) / float64(n)
			want = append(want, PairFigure{A: fmt.Sprintf("m%d", a), B: fmt.Sprintf("m%d", b), Figure: Figure{Value: &v, N: n, TooFew: n < 10}})
		}
	}
	require.Equal(t, want, got)
	// m0 and m1 co-rated 10 targets and agreed on 8.
	require.Equal(t, 10, got[0].Figure.N)
	require.InDelta(t, 0.8, *got[0].Figure.Value, 1e-12)
	require.False(t, got[0].Figure.TooFew)
}

func TestMembersMatchReference(t *testing.T) {
	t.Parallel()
	scores := map[string]float64{}
	for j, s := range modelScores {
		scores[fmt.Sprintf("t%02d", j)] = s
	}
	got := Members(teamJudgments(), scores)
	require.Len(t, got, len(team))
	for i, row := range team {
		judged, cN, cAgree, mN, mAgree := 0, 0, 0, 0, 0
		for j, v := range row {
			if v == 0 {
				continue
			}
			judged++
			plus, minus := 0, 0
			for k := range team {
				switch {
				case k == i:
				case team[k][j] == 1:
					plus++
				case team[k][j] == -1:
					minus++
				}
			}
			if plus != minus {
				cN++
				if (plus > minus) == (v == 1) {
					cAgree++
				}
			}
			if modelScores[j] != 0 {
				mN++
				if (modelScores[j] > 0) == (v > 0) {
					mAgree++
				}
			}
		}
		f := got[i]
		require.Equal(t, fmt.Sprintf("m%d", i), f.Member)
		require.Equal(t, judged, f.Judged)
		require.Equal(t, cN, f.Consensus.N, f.Member)
		require.InDelta(t, float64(cAgree)/float64(cN), *f.Consensus.Value, 1e-12, f.Member)
		require.Equal(t, cN < 10, f.Consensus.TooFew)
		require.NotNil(t, f.Model)
		require.Equal(t, mN, f.Model.N, f.Member)
		require.InDelta(t, float64(mAgree)/float64(mN), *f.Model.Value, 1e-12, f.Member)
	}
	// Without a model there is no model figure.
	require.Nil(t, Members(teamJudgments(), nil)[0].Model)
}

func TestMembersConsensusExcludesTies(t *testing.T) {
	t.Parallel()
	// On x the others of a tie 1–1: no consensus for a; on y they agree.
	got := Members([]Judgment{{"x", "a", 1}, {"x", "b", 1}, {"x", "c", -1}, {"y", "a", 1}, {"y", "b", -1}, {"y", "c", -1}}, nil)
	require.Equal(t, "a", got[0].Member)
	require.Equal(t, 1, got[0].Consensus.N)
	require.Equal(t, 0.0, *got[0].Consensus.Value)
	// One rater alone has no consensus at all.
	alone := Members([]Judgment{{"x", "a", 1}}, nil)
	require.Nil(t, alone[0].Consensus.Value)
	require.Equal(t, 0, alone[0].Consensus.N)
	require.True(t, alone[0].Consensus.TooFew)
}

func TestDisputed(t *testing.T) {
	t.Parallel()
	got := Disputed(teamJudgments())
	var want []string
	for j := range team[0] {
		seen := map[float64]bool{}
		for i := range team {
			if team[i][j] != 0 {
				seen[team[i][j]] = true
			}
		}
		if len(seen) > 1 {
			want = append(want, fmt.Sprintf("t%02d", j))
		}
	}
	var targets []string
	for _, d := range got {
		targets = append(targets, d.Target)
	}
	require.Equal(t, want, targets)
	require.Equal(t, map[string]float64{"m0": 1, "m1": 1, "m2": -1, "m3": 1}, got[0].Values, "t01's values by member")
	require.Empty(t, Disputed(judgments([][]float64{{1, -1}, {1, -1}})))
	require.Empty(t, Disputed(nil))
}

func TestCheckOverlap(t *testing.T) {
	t.Parallel()
	require.NoError(t, CheckOverlap(1))
	require.NoError(t, CheckOverlap(MaxOverlap))
	require.Error(t, CheckOverlap(0))
	require.Error(t, CheckOverlap(MaxOverlap+1))
}
