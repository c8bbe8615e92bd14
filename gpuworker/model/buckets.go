package model

import (
	"fmt"
	"maps"
	"slices"
)

// ScoreBucketLens are the sequence lengths scoring pads to: a fixed ladder of powers of
// two and their 1.5× midpoints from 64 to 1024 (doubling on past 1024 for longer
// limits). Each length is one compiled graph per batch-row count, so the number of
// shapes a scoring run compiles is bounded by the ladder rather than by the texts'
// lengths, and a text wastes at most a third of its row on padding (64-token texts run
// at 64, not at 1024).
var ScoreBucketLens = []int{64, 96, 128, 192, 256, 384, 512, 768, 1024}

// ScoreBucketLen is the smallest ScoreBucketLens entry ≥ n; past 1024 it continues the
// ladder (1536, 2048, 3072, ...).
func ScoreBucketLen(n int) int {
	for _, b := range ScoreBucketLens {
		if n <= b {
			return b
		}
	}
	lo, hi := 1024, 1536
	for {
		if n <= hi {
			return hi
		}
		lo, hi = hi, lo*2
	}
}

// DefaultScoreTokens is the padded-token budget of one scoring batch: 8 rows of 1024,
// the batch size scoring has always used for full-length texts. Shorter buckets get
// proportionally more rows (128 rows of 64 tokens), so a forward pass always carries
// about the same work and memory stays bounded (attention memory only shrinks).
const DefaultScoreTokens = 8 * 1024

// bucketRows is how many rows a batch of bucket length T gets under a token budget:
// the budget's share, at least 1, a power of two so partial batches round up to one of
// a few row counts too.
func bucketRows(T, budget int) int {
	rows := 1
	for rows*2*T <= budget {
		rows *= 2
	}
	return rows
}

// ScoreBatch is one forward pass of a bucketed plan: the input indices it scores
// (Index) padded to Len tokens in Rows rows (Rows ≥ len(Index); the rest is filler).
type ScoreBatch struct {
	Len   int   `json:"len"`
	Rows  int   `json:"rows"`
	Index []int `json:"index"`
}

// PlanBuckets splits sequences of the given lengths into bucketed batches: grouped by
// ScoreBucketLen in increasing order, each group in batches of bucketRows(T, budget)
// rows of exactly T tokens, a group's last, partial batch rounded up to the next power
// of two rows. Every batch therefore has one of at most len(buckets) × log2(rows)
// shapes. Within a group, input order is kept.
func PlanBuckets(lens []int, tokenBudget int) []ScoreBatch {
	if tokenBudget <= 0 {
		tokenBudget = DefaultScoreTokens
	}
	groups := map[int][]int{}
	for i, n := range lens {
		T := ScoreBucketLen(max(n, 1))
		groups[T] = append(groups[T], i)
	}
	var plan []ScoreBatch
	for _, T := range slices.Sorted(maps.Keys(groups)) {
		idx := groups[T]
		rows := bucketRows(T, tokenBudget)
		for start := 0; start < len(idx); start += rows {
			part := idx[start:min(start+rows, len(idx))]
			n := rows
			for n/2 >= len(part) {
				n /= 2
			}
			plan = append(plan, ScoreBatch{Len: T, Rows: n, Index: part})
		}
	}
	return plan
}

// ScoreBucketed scores seqs in the batches of PlanBuckets and returns rewards in input
// order. The Scorer compiles each batch shape once and caches it, so a scoring run
// compiles a bounded number of graphs whatever the texts' lengths. A sequence's reward
// does not depend on its batch-mates or padding beyond float rounding (the key mask
// hides padded positions; see TestBucketedScoringMatchesOneAtATime).
func ScoreBucketed(s *Scorer, seqs [][]int, tokenBudget int) ([]float64, error) {
	lens := make([]int, len(seqs))
	for i, seq := range seqs {
		lens[i] = len(seq)
	}
	out := make([]float64, len(seqs))
	for _, b := range PlanBuckets(lens, tokenBudget) {
		batch := make([][]int, b.Rows)
		for j, i := range b.Index {
			batch[j] = seqs[i]
		}
		r, err := s.rewardsShaped(batch, b.Len)
		if err != nil {
			return nil, err
		}
		for j, i := range b.Index {
			out[i] = r[j]
		}
	}
	return out, nil
}

// checkIDs rejects token ids the embedding cannot look up.
func (s *Scorer) checkIDs(seqs [][]int) error {
	for i, seq := range seqs {
		for _, id := range seq {
			if id < 0 || id >= s.m.Config.VocabSize {
				return fmt.Errorf("sequence %d: token id %d outside the model's vocabulary (%d)", i, id, s.m.Config.VocabSize)
			}
		}
	}
	return nil
}
