package model

import (
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified
)

// causalBlock is the query-block length of selfAttention: queries t in
// [i·causalBlock, (i+1)·causalBlock) can only see keys s < (i+1)·causalBlock, so block
// i multiplies, masks and softmaxes against that prefix of the keys instead of all T.
// With n = T/causalBlock blocks that is (n+1)/(2n) of the full square's work: 62.5 %
// for 1024 tokens. Smaller blocks skip more but copy more (each block but the last
// slices its key and value prefixes; compute v0.1.2 copies a Slice element by
// element) and leave more buffer sizes in the backend's pools: 128 measured the same
// speed as 256 (Qwen3-0.6B shape, 8 × 1024 tokens) and a higher peak RSS (2.54–2.70
// against 2.44–2.49 GiB at 4 layers).
const causalBlock = 256

// causalBlocks returns how many query blocks selfAttention splits T into, or 1 where
// the full square is used: T not a multiple of causalBlock, or a single block.
func causalBlocks(T int) int {
	if T%causalBlock != 0 {
		return 1
	}
	return T / causalBlock
}

// selfAttention is the causal attention of one layer: q [B,KV,G,T,D] (already scaled),
// k, v [B,KV,S,D] with S = T, allowed [B,T,S] (causal and key not padded) ->
// softmax(q·kᵀ masked)·v [B,KV,G,T,D].
//
// From two query blocks on (see causalBlock) the future keys, which the mask would
// send to probability exactly 0, are never multiplied: the probabilities a query row
// gets are the same (its row of the square sums the same non-zero terms), only the
// summation's blocking in the matmul and softmax can round differently. That is the
// bulk of scoring's attention at 1024 tokens: q·kᵀ, the mask, the softmax and p·v each
// over [B,KV,G,T,S] = 8 × 16 × 1024 × 1024 scores a layer (8 × 1024 tokens of the
// Qwen3-0.6B shape), the softmax and mask single-threaded in the pure-Go backend.
func selfAttention(q, k, v, allowed, fill *Node) *Node {
	dims := q.Shape().Dimensions
	B, KV, G, T := dims[0], dims[1], dims[2], dims[3]
	n := causalBlocks(T)
	if n == 1 {
		return fullAttention(q, k, v, allowed, fill)
	}
	outs := make([]*Node, n)
	for i := range n {
		r0, r1 := i*causalBlock, (i+1)*causalBlock
		qi, ki, vi := SliceAxis(q, 3, AxisRange(r0, r1)), k, v
		if i > 0 {
			// One block at a time (see after): an op-parallel backend would
			// otherwise run every block at once and hold all their scores.
			qi = after(qi, outs[i-1])
		}
		if r1 < T {
			ki, vi = SliceAxis(k, 2, AxisRange(0, r1)), SliceAxis(v, 2, AxisRange(0, r1))
		}
		// The large-matmul path packs k's [S,D] rows as they are, so no transpose of k
		// (attnScores' layout is for the small kernels of short sequences).
		scores := DotGeneral(qi, []int{4}, []int{0, 1}, ki, []int{3}, []int{0, 1}) // [B,KV,G,tb,r1]
		ai := Slice(allowed, AxisRange(), AxisRange(r0, r1), AxisRange(0, r1))     // [B,tb,r1]
		ai = BroadcastToDims(Reshape(ai, B, 1, 1, causalBlock, r1), B, KV, G, causalBlock, r1)
		outs[i] = attend(masked(ai, scores, fill), vi)
	}
	return Concatenate(outs, 3)
}

// fullAttention is selfAttention over the whole [T,S] square: for short sequences,
// where one block is the whole square or a T that is not a multiple of causalBlock.
func fullAttention(q, k, v, allowed, fill *Node) *Node {
	dims := q.Shape().Dimensions
	B, KV, G, T := dims[0], dims[1], dims[2], dims[3]
	a := BroadcastToDims(Reshape(allowed, B, 1, 1, T, T), B, KV, G, T, T)
	return attend(masked(a, attnScores(q, k), fill), v)
}
