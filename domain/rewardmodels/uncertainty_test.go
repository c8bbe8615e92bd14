package rewardmodels

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCalibratedScoreAndUncertainty(t *testing.T) {
	s := RewardStats{Mean: 2, Std: 0.5, Count: 8}
	require.InDelta(t, 0.5, s.Calibrated(2), 1e-12, "the calibration mean is 0.5")
	require.InDelta(t, 1/(1+math.Exp(-2)), s.Calibrated(3), 1e-12, "two standard deviations above")
	require.InDelta(t, 1/(1+math.Exp(2)), s.Calibrated(1), 1e-12)
	require.InDelta(t, 0.5, RewardStats{Mean: 1}.Calibrated(1), 1e-12, "a zero std does not divide by zero")

	// A trace and an action as many standard deviations from their means
	// are equally uncertain: |2σ(z) − 1| = |tanh(z/2)|.
	for _, z := range []float64{-3, -0.4, 0, 0.1, 2.5} {
		credit := math.Tanh(z / 2)
		require.InDelta(t, ActionUncertainty(credit), TraceUncertainty(s.Calibrated(s.Mean+z*s.Std)), 1e-12, "z=%v", z)
	}
	require.Equal(t, 0.0, TraceUncertainty(0.5))
	require.InDelta(t, 0.8, TraceUncertainty(0.1), 1e-12)
}

func TestParseRewardStats(t *testing.T) {
	got := ParseRewardStats(json.RawMessage(`{"mean": -0.25, "std": 1.5, "count": 12}`))
	require.Equal(t, &RewardStats{Mean: -0.25, Std: 1.5, Count: 12}, got)
	for _, raw := range []string{"", "null", "[1]", `{"mean": "x"}`} {
		require.Nil(t, ParseRewardStats(json.RawMessage(raw)), raw)
	}
}
