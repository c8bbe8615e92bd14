package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/gomlx/compute"

	"github.com/criticml/critic/domain/rewardmodels"
)

// Tokenizer is what the reward model needs from gpuworker/tokenizer.
type Tokenizer interface {
	Encode(text string) []int
	VocabSize() int
	PadTokenID() (int, bool)
	EOSTokenID() (int, bool)
}

// DefaultMaxLen is the saved token limit (spec 002 "Training settings").
const DefaultMaxLen = 1024

// EncodeForReward is the one definition of how a rendered text becomes model input,
// used by training and scoring alike: the tokenizer's ids with no special tokens added
// (transformers' tokenizer adds none for Qwen, and the sequence-classification
// pipeline appends no EOS), left-truncated to the last maxLen ids so the end of the
// conversation — the part being judged — is kept.
func EncodeForReward(tok Tokenizer, text string, maxLen int) []int {
	ids := tok.Encode(text)
	if maxLen > 0 && len(ids) > maxLen {
		ids = ids[len(ids)-maxLen:]
	}
	return ids
}

// ResolvePadID picks pad_token_id for a model: the config's, else the tokenizer's pad,
// else its EOS (what HF recipes set before batching a Qwen3 classifier).
func ResolvePadID(cfg *Config, tok Tokenizer) error {
	if cfg.PadTokenID >= 0 {
		return nil
	}
	if id, ok := tok.PadTokenID(); ok {
		cfg.PadTokenID = id
		return nil
	}
	if id, ok := tok.EOSTokenID(); ok {
		cfg.PadTokenID = id
		return nil
	}
	return errors.New("neither the model config nor the tokenizer defines a pad or EOS token")
}

// CheckTokenizer fails when the tokenizer can produce ids the embedding cannot hold.
func CheckTokenizer(cfg *Config, tok Tokenizer) error {
	if tok.VocabSize() > cfg.VocabSize {
		return fmt.Errorf("tokenizer mismatch: tokenizer vocabulary %d exceeds the model's vocab_size %d",
			tok.VocabSize(), cfg.VocabSize)
	}
	return nil
}

// ComputeStats returns the mean and population std of xs.
func ComputeStats(xs []float64) rewardmodels.RewardStats {
	var s rewardmodels.RewardStats
	s.Count = len(xs)
	if len(xs) == 0 {
		return s
	}
	for _, x := range xs {
		s.Mean += x
	}
	s.Mean /= float64(len(xs))
	for _, x := range xs {
		s.Std += (x - s.Mean) * (x - s.Mean)
	}
	s.Std = math.Sqrt(s.Std / float64(len(xs)))
	return s
}

// WriteStats writes stats as JSON to path.
func WriteStats(path string, s rewardmodels.RewardStats) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// readStats reads a stats file: nil when the checkpoint has none.
func readStats(path string) (*rewardmodels.RewardStats, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s rewardmodels.RewardStats
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// RewardModel is a loaded reward-model checkpoint ready to score texts.
type RewardModel struct {
	Model       *Model
	Tokenizer   Tokenizer
	MaxLen      int
	Stats       *rewardmodels.RewardStats // reward_stats.json, nil when absent
	ActionStats *rewardmodels.RewardStats // action_reward_stats.json, nil when absent
	// BatchSize is how many full-length (1024-token) sequences one forward pass holds;
	// scoring's token budget is BatchSize × 1024 padded tokens, so shorter texts run in
	// proportionally larger batches (see ScoreBucketed). Memory scales with it.
	BatchSize int
	scorer    *Scorer
}

// LoadRewardModelWith loads dir's weights and stats, using tok as its tokenizer.
func LoadRewardModelWith(dir string, tok Tokenizer) (*RewardModel, error) {
	backend, err := NewBackend()
	if err != nil {
		return nil, err
	}
	return loadRewardModelOn(backend, dir, tok)
}

// LoadRewardModelOn is LoadRewardModel on the backend spec names (a
// GOMLX_BACKEND value; "" is the default): a caller that knows what it will
// run — the worker's scoring of small models — picks the engine's options.
func LoadRewardModelOn(dir, spec string) (*RewardModel, error) {
	if _, err := LoadConfig(dir); err != nil { // report a bad config before tokenizer problems
		return nil, err
	}
	tok, err := LoadTokenizer(dir)
	if err != nil {
		return nil, err
	}
	backend, err := NewBackendFrom(spec)
	if err != nil {
		return nil, err
	}
	return loadRewardModelOn(backend, dir, tok)
}

func loadRewardModelOn(backend compute.Backend, dir string, tok Tokenizer) (*RewardModel, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	if err := CheckTokenizer(cfg, tok); err != nil {
		return nil, err
	}
	m, err := Load(backend, dir, 0)
	if err != nil {
		return nil, err
	}
	if err := ResolvePadID(m.Config, tok); err != nil {
		return nil, err
	}
	rm := &RewardModel{Model: m, Tokenizer: tok, MaxLen: DefaultMaxLen, BatchSize: 8}
	if rm.Stats, err = readStats(filepath.Join(dir, "reward_stats.json")); err != nil {
		return nil, err
	}
	if rm.ActionStats, err = readStats(filepath.Join(dir, "action_reward_stats.json")); err != nil {
		return nil, err
	}
	if rm.scorer, err = m.NewScorer(); err != nil {
		return nil, err
	}
	return rm, nil
}

// Score returns the raw reward of each text in input order, scored in length-bucketed
// batches (ScoreBucketed) so padding and the number of compiled shapes stay small.
func (rm *RewardModel) Score(texts []string) ([]float64, error) {
	seqs := make([][]int, len(texts))
	for i, t := range texts {
		seqs[i] = EncodeForReward(rm.Tokenizer, t, rm.MaxLen)
	}
	if rm.scorer == nil {
		var err error
		if rm.scorer, err = rm.Model.NewScorer(); err != nil {
			return nil, err
		}
	}
	return ScoreBucketed(rm.scorer, seqs, max(rm.BatchSize, 1)*DefaultMaxLen)
}
