package gepa

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fixedScorer scores a rendered conversation by rule, with no model: the
// example's own weight (from its order number, so examples differ a lot)
// plus 0.5 when the reply checked the order.
type fixedScorer struct{}

var orderNo = regexp.MustCompile(`order (\d+)`)

// exampleWeight is example i's base score (examples(n) asks about order
// 1100 + (i+30)·7): the square makes the held-out examples' mean differ from
// the search examples'.
func exampleWeight(i int) float64 { return 0.004 * float64(i*i) }

func (fixedScorer) Score(_ context.Context, texts []string) ([]float64, error) {
	out := make([]float64, len(texts))
	for k, t := range texts {
		n, _ := strconv.Atoi(orderNo.FindStringSubmatch(t)[1])
		out[k] = exampleWeight((n-1100)/7 - 30)
		if strings.Contains(t, checkedReply) {
			out[k] += 0.5
		}
	}
	return out, nil
}

// seed_score and best_score are means over every example, the held-out ones
// included (spec 001 "Skill creation (GEPA)"); the held-out means are an
// addition beside them, and the candidates keep their search-example means.
func TestSeedAndBestScoresAreOverAllExamples(t *testing.T) {
	s := newServers(t)
	exs := examples(10)
	cfg := s.config(t, exs, 40)
	cfg.Scorer = fixedScorer{}
	res, err := Optimize(context.Background(), cfg)
	require.NoError(t, err)
	require.NotNil(t, res.Holdout)
	require.Equal(t, 2, res.Holdout.Examples)
	require.Contains(t, res.BestSkill, "check the order", "the best skill is the one that makes the agent check")

	all := 0.0
	for i := range exs {
		all += exampleWeight(i)
	}
	all /= float64(len(exs))
	require.InDelta(t, all, res.SeedScore, 1e-9, "the seed (the agent promises) over all 10 examples")
	require.InDelta(t, all+0.5, res.BestScore, 1e-9, "the best skill (the agent checks) over all 10 examples")

	// The held-out and search-only means differ from it, so the test tells
	// the figures apart.
	require.Greater(t, abs(res.Holdout.SeedScore-all), 0.01)
	require.InDelta(t, res.Holdout.SeedScore+0.5, res.Holdout.BestScore, 1e-9)
	search := (all*10 - res.Holdout.SeedScore*2) / 8
	require.InDelta(t, search, res.Candidates[0].Score, 1e-9, "candidates compare on the search examples")
	require.Greater(t, abs(search-all), 0.001)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
