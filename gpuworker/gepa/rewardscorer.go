package gepa

import (
	"context"
	"errors"
	"sync"

	"github.com/criticml/critic/gpuworker/model"
)

// RewardScorer scores with a loaded reward-model checkpoint. The model's
// forward pass is not safe for concurrent use, so calls are serialized; a
// candidate's replies arrive as one batch, which is what the model is fast at.
type RewardScorer struct {
	mu sync.Mutex
	rm *model.RewardModel
}

// NewRewardScorer wraps rm, which must carry reward_stats.json: GEPA's
// calibrated score needs the training pairs' mean and std.
func NewRewardScorer(rm *model.RewardModel) (*RewardScorer, error) {
	if rm.Stats == nil {
		return nil, errors.New("the reward model has no reward_stats.json, which GEPA's calibrated score sigmoid((reward − mean)/std) needs; retrain the model")
	}
	return &RewardScorer{rm: rm}, nil
}

// Score returns sigmoid((reward − mean)/std) per text.
func (s *RewardScorer) Score(ctx context.Context, texts []string) ([]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	raw, err := s.rm.Score(texts)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(raw))
	for i, r := range raw {
		out[i] = s.rm.Stats.Calibrated(r)
	}
	return out, nil
}
