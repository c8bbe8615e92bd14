package model

import (
	"fmt"
	"sync"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// Batch is a padded batch of token sequences in the graph's input layout.
type Batch struct {
	IDs     *tensors.Tensor // [B,T] int32, right-padded with the pad id
	KeyMask *tensors.Tensor // [B,T] float32 attention_mask
	Pool    *tensors.Tensor // [B,T] float32 one-hot of the pooled token
	Tokens  int             // real (non-pad) tokens
}

// BucketLen rounds n up to a multiple of 16 so the number of compiled graph shapes
// stays small while padding waste stays under 16 tokens per sequence.
func BucketLen(n int) int {
	const q = 16
	return (n + q - 1) / q * q
}

// MakeBatch right-pads seqs to BucketLen(longest) with pad. The pooled token follows
// HF's sequence classifier: the last position whose id differs from pad_token_id
// (position 0 when every id is pad), so a text that itself ends in the pad token is
// pooled exactly as transformers pools it. An empty sequence becomes [pad].
func MakeBatch(seqs [][]int, pad int) Batch {
	T := 1
	for _, s := range seqs {
		T = max(T, len(s))
	}
	return MakeBatchLen(seqs, pad, BucketLen(T))
}

// MakeBatchLen is MakeBatch padded to exactly T positions (T ≥ every sequence's
// length); nil rows become one-token pad rows (filler for a fixed batch shape).
func MakeBatchLen(seqs [][]int, pad, T int) Batch {
	B := len(seqs)
	ids := make([]int32, B*T)
	mask := make([]float32, B*T)
	pool := make([]float32, B*T)
	var tokens int
	for b, s := range seqs {
		if len(s) == 0 {
			s = []int{pad}
		}
		last := 0
		for t := range T {
			id := pad
			if t < len(s) {
				id = s[t]
				mask[b*T+t] = 1
				tokens++
			}
			ids[b*T+t] = int32(id)
			if id != pad {
				last = t
			}
		}
		pool[b*T+last] = 1
	}
	return Batch{
		IDs:     tensors.FromFlatDataAndDimensions(ids, B, T),
		KeyMask: tensors.FromFlatDataAndDimensions(mask, B, T),
		Pool:    tensors.FromFlatDataAndDimensions(pool, B, T),
		Tokens:  tokens,
	}
}

// Scorer runs the forward graph; graphs are compiled per (B, T) and cached.
type Scorer struct {
	m    *Model
	exec *graph.Exec

	mu     sync.Mutex
	shapes map[[2]int]int // (B, T) → forward passes run with that shape
}

// NewScorer compiles lazily on first use.
func (m *Model) NewScorer() (*Scorer, error) {
	n := len(m.Specs)
	cfg := m.Config
	exec, err := graph.NewExec(m.Backend, func(inputs []*graph.Node) *graph.Node {
		return cfg.ForwardNoGrad(inputs[:n], inputs[n], inputs[n+1], inputs[n+2])
	})
	if err != nil {
		return nil, err
	}
	exec.SetMaxCache(-1)
	return &Scorer{m: m, exec: exec, shapes: map[[2]int]int{}}, nil
}

// Rewards returns one reward per sequence, all sequences in one batch.
func (s *Scorer) Rewards(seqs [][]int) ([]float64, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	T := 1
	for _, seq := range seqs {
		T = max(T, len(seq))
	}
	return s.rewardsShaped(seqs, BucketLen(T))
}

// rewardsShaped runs one forward pass over seqs padded to T tokens (nil rows are
// filler) and returns one reward per row.
func (s *Scorer) rewardsShaped(seqs [][]int, T int) ([]float64, error) {
	if err := s.checkIDs(seqs); err != nil {
		return nil, err
	}
	for i, seq := range seqs {
		if len(seq) > T {
			return nil, fmt.Errorf("sequence %d: %d tokens do not fit a %d-token batch", i, len(seq), T)
		}
	}
	b := MakeBatchLen(seqs, s.m.PadID(), T)
	s.mu.Lock()
	s.shapes[[2]int{len(seqs), T}]++
	s.mu.Unlock()
	args := make([]any, 0, len(s.m.Params)+3)
	for _, p := range s.m.Params {
		args = append(args, p)
	}
	args = append(args, b.IDs, b.KeyMask, b.Pool)
	out, err := s.exec.Exec1(args...)
	if err != nil {
		return nil, err
	}
	defer out.FinalizeAll()
	flat := tensors.MustCopyFlatData[float32](out)
	res := make([]float64, len(flat))
	for i, v := range flat {
		res[i] = float64(v)
	}
	return res, nil
}

// PadID is the id used for padding and for HF's last-token rule: config
// pad_token_id. The loaders always set one (from the tokenizer when the base lacks it).
func (m *Model) PadID() int {
	if m.Config.PadTokenID >= 0 {
		return m.Config.PadTokenID
	}
	return 0
}
