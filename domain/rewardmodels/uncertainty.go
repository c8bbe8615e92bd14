package rewardmodels

import (
	"encoding/json"
	"math"
)

// RewardStats is a model's reward_stats.json (or action_reward_stats.json):
// the mean and population standard deviation of its rewards over the
// training texts. The API shows them on the model, so a client can put any
// raw reward of that model on the calibrated scale without the checkpoint.
type RewardStats struct {
	Mean  float64 `json:"mean"`
	Std   float64 `json:"std"`
	Count int     `json:"count"`
}

// ParseRewardStats reads the stats a worker reported; absent, JSON null or
// malformed stats are nil (a model without them cannot be calibrated, which
// callers say instead of guessing a scale).
func ParseRewardStats(raw json.RawMessage) *RewardStats {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s RewardStats
	if json.Unmarshal(raw, &s) != nil || math.IsNaN(s.Mean) || math.IsNaN(s.Std) || math.IsInf(s.Mean, 0) || math.IsInf(s.Std, 0) {
		return nil
	}
	return &s
}

// std avoids dividing by zero when every training reward was identical.
func (s RewardStats) std() float64 { return max(s.Std, 1e-6) }

// Calibrated is the calibrated score sigmoid((r − mean) / std) of spec 004
// (GEPA's metric): 0.5 at the calibration mean, 0–1, not a probability of
// correctness.
func (s RewardStats) Calibrated(r float64) float64 {
	return 1 / (1 + math.Exp(-(r-s.Mean)/s.std()))
}

// Credit is action credit tanh((r − mean)/(2·std)) (spec 001 "Learned
// action credit"), which the worker reports with each action's score.
func (s RewardStats) Credit(r float64) float64 {
	return math.Tanh((r - s.Mean) / (2 * s.std()))
}

// TraceUncertainty is how far a whole trace's calibrated score is from 0.5,
// on the 0–1 scale of |action credit|: |2·calibrated − 1|. Because
// 2·sigmoid(z) − 1 = tanh(z/2) and credit is tanh((r − mean)/(2·std)), a trace
// and an action whose rewards are equally many standard deviations from
// their means rank equally, so the review queue can interleave the two by
// one number (0 = the model cannot tell good from bad).
func TraceUncertainty(calibrated float64) float64 { return math.Abs(2*calibrated - 1) }

// ActionUncertainty is |credit|: credit nearest zero is where the model is
// least sure whether the action helped.
func ActionUncertainty(credit float64) float64 { return math.Abs(credit) }
