package model

import (
	"fmt"
	"os"

	"github.com/criticml/critic/gpuworker/tokenizer"
)

// LoadTokenizer loads <dir>/tokenizer.json with gpuworker/tokenizer.
func LoadTokenizer(dir string) (Tokenizer, error) {
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return tok, nil
}

// LoadRewardModel loads a saved reward-model checkpoint with its own tokenizer.
func LoadRewardModel(dir string) (*RewardModel, error) {
	return LoadRewardModelOn(dir, os.Getenv(BackendEnv))
}
