package model_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/model/modeltest"
)

func TestScoreBucketLenLadder(t *testing.T) {
	for n, want := range map[int]int{1: 64, 64: 64, 65: 96, 96: 96, 97: 128, 200: 256, 700: 768,
		1000: 1024, 1024: 1024, 1025: 1536, 1537: 2048, 2049: 3072, 3073: 4096} {
		require.Equal(t, want, model.ScoreBucketLen(n), "n=%d", n)
	}
}

// Scoring a realistic mix of lengths in length-bucketed batches gives every text the
// reward it gets when scored alone (within 1e-5), in input order, while the scorer
// only ever runs a few fixed shapes: lengths from the bucket ladder (short texts are
// not padded to the longest) and power-of-two row counts within the token budget.
func TestBucketedScoringMatchesOneAtATime(t *testing.T) {
	backend, err := model.NewBackend()
	require.NoError(t, err)
	spec := modeltest.Tiny()
	spec.PadTokenID = 0
	cfg, err := model.NewBaseConfig(spec)
	require.NoError(t, err)
	m, err := model.NewRandom(backend, cfg, 3)
	require.NoError(t, err)
	defer m.Finalize()

	rng := rand.New(rand.NewPCG(5, 6))
	lens := []int{0, 1, 7, 64, 65, 100, 130, 300, 520, 64, 33, 2, 90, 250, 700}
	for range 25 {
		lens = append(lens, 1+rng.IntN(200))
	}
	seqs := make([][]int, len(lens))
	for i, n := range lens {
		seqs[i] = make([]int, n)
		for j := range seqs[i] {
			seqs[i][j] = 1 + rng.IntN(spec.Vocab-1)
		}
	}
	// A text ending in the pad id is pooled at its last non-pad token, batched or not.
	seqs[3][63] = 0

	alone, err := m.NewScorer()
	require.NoError(t, err)
	want := make([]float64, len(seqs))
	for i := range seqs {
		r, err := alone.Rewards(seqs[i : i+1])
		require.NoError(t, err)
		want[i] = r[0]
	}

	// 16 texts padded to 256 tokens (the longest has 250): enough for Forward's two
	// independent chains of sequences; each text still gets its reward alone.
	var chained [][]int
	var chainedWant []float64
	for i, seq := range seqs {
		if len(seq) > 0 && len(seq) <= 256 && len(chained) < 16 {
			chained, chainedWant = append(chained, seq), append(chainedWant, want[i])
		}
	}
	require.Len(t, chained, 16)
	chainedGot, err := alone.Rewards(chained)
	require.NoError(t, err)
	require.Contains(t, alone.Shapes(), [2]int{16, 256})
	for i := range chained {
		require.InDelta(t, chainedWant[i], chainedGot[i], 1e-5, "chained batch, text %d (%d tokens)", i, len(chained[i]))
	}

	sc, err := m.NewScorer()
	require.NoError(t, err)
	const budget = 1024 // 16 rows of 64, 4 of 256, 1 of 768: several full and partial batches
	got, err := model.ScoreBucketed(sc, seqs, budget)
	require.NoError(t, err)
	require.Len(t, got, len(seqs))
	var maxDiff float64
	for i := range seqs {
		require.InDelta(t, want[i], got[i], 1e-5, "sequence %d (%d tokens)", i, lens[i])
		maxDiff = max(maxDiff, math.Abs(want[i]-got[i]))
	}
	t.Logf("max |batched − alone| = %.2g over %d texts", maxDiff, len(seqs))
	distinct := map[float64]bool{}
	for _, r := range got {
		distinct[r] = true
	}
	require.Greater(t, len(distinct), len(seqs)/2, "rewards must differ between texts")

	buckets := map[int]bool{}
	for _, T := range model.ScoreBucketLens {
		buckets[T] = true
	}
	shapes := sc.Shapes()
	passes := 0
	for sh, n := range shapes {
		B, T := sh[0], sh[1]
		require.True(t, buckets[T], "length %d is not a bucket", T)
		require.LessOrEqual(t, B*T, budget, "shape %v exceeds the token budget", sh)
		require.Equal(t, 0, B&(B-1), "row count %d is not a power of two", B)
		passes += n
	}
	require.Contains(t, shapes, [2]int{16, 64}, "short texts run 16 to a 64-token batch, not padded to the longest")
	require.LessOrEqual(t, len(shapes), 12, "shapes: %v", shapes)
	require.Less(t, passes, len(seqs)/2, "texts must share forward passes: %v", shapes)

	// Scoring again compiles nothing new: the same shapes, each used twice as often.
	_, err = model.ScoreBucketed(sc, seqs, budget)
	require.NoError(t, err)
	again := sc.Shapes()
	require.Len(t, again, len(shapes))
	for sh, n := range shapes {
		require.Equal(t, 2*n, again[sh])
	}

	_, err = model.ScoreBucketed(sc, [][]int{{1, 2, spec.Vocab}}, budget)
	require.ErrorContains(t, err, "outside the model's vocabulary")
}
