package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

// The causal blocks of selfAttention (3 query blocks here) give the same outputs
// and the same q/k/v gradients as the full masked square, with right padding in one
// sequence (padded keys masked, padded query rows still attending to the real prefix).
func TestBlockedAttentionMatchesFullSquare(t *testing.T) {
	const B, KV, G, T, D = 2, 2, 2, 3 * causalBlock, 8
	require.Equal(t, 3, causalBlocks(T))
	require.Equal(t, 1, causalBlocks(T-64), "a length that is not a multiple of the block keeps the square")
	backend, err := NewBackend()
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 11))
	randn := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(rng.NormFloat64())
		}
		return out
	}
	q, k, v := randn(B*KV*G*T*D), randn(B*KV*T*D), randn(B*KV*T*D)
	w := randn(B * KV * G * T * D) // weights of the loss whose gradients are compared
	keyMask := make([]float32, B*T)
	for s := range T {
		keyMask[s] = 1
		if s < T-100 { // the second sequence is right-padded by 100 tokens
			keyMask[T+s] = 1
		}
	}
	run := func(attn func(q, k, v, allowed, fill *Node) *Node) [][]float32 {
		e, err := NewExec(backend, func(q, k, v, w, keyMask *Node) []*Node {
			g := q.Graph()
			q, k, v = Reshape(q, B, KV, G, T, D), Reshape(k, B, KV, T, D), Reshape(v, B, KV, T, D)
			causal := LessOrEqual(Iota(g, shapes.Make(dtypes.Int32, T, T), 1), Iota(g, shapes.Make(dtypes.Int32, T, T), 0))
			keyOK := GreaterThan(Reshape(keyMask, B, T), ScalarZero(g, dtypes.Float32))
			allowed := LogicalAnd(BroadcastToDims(Reshape(causal, 1, T, T), B, T, T), BroadcastToDims(Reshape(keyOK, B, 1, T), B, T, T))
			o := attn(q, k, v, allowed, Scalar(g, dtypes.Float32, -math.MaxFloat32))
			loss := ReduceAllSum(Mul(o, Reshape(w, B, KV, G, T, D)))
			grads := Gradient(loss, q, k, v)
			return []*Node{o, grads[0], grads[1], grads[2]}
		})
		require.NoError(t, err)
		outs, err := e.Exec(q, k, v, w, keyMask)
		require.NoError(t, err)
		flat := make([][]float32, len(outs))
		for i, o := range outs {
			flat[i] = tensors.MustCopyFlatData[float32](o)
		}
		return flat
	}
	want, got := run(fullAttention), run(selfAttention)
	// The two paths add the same float32 terms in different orders (per
	// block, and matmuls split over goroutines), so the gradients, sums of
	// hundreds of terms, differ by rounding: 1.15e-5 was seen on a 0.137.
	// One key masked differently moves an output by 3.6e-3, far outside.
	const tolerance = 1e-4
	for i, name := range []string{"output", "dq", "dk", "dv"} {
		require.Len(t, got[i], len(want[i]), name)
		for j := range want[i] {
			require.InDelta(t, want[i][j], got[i][j], tolerance*max(1, math.Abs(float64(want[i][j]))), "%s[%d]", name, j)
		}
	}
}

// BenchmarkAttention times one layer's attention at the Qwen3-0.6B scoring shape
// (8 × 1024 tokens, 8 kv heads × 2 queries, head 128), over the full masked square
// and in causal blocks, in the same run: go test -bench Attention -benchtime 3x.
func BenchmarkAttention(b *testing.B) {
	const B, KV, G, T, D = 8, 8, 2, 1024, 128
	backend, err := NewBackend()
	require.NoError(b, err)
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(dims ...int) *tensors.Tensor {
		t := tensors.FromShape(shapes.Make(dtypes.Float32, dims...))
		tensors.MutableFlatData(t, func(flat []float32) {
			for i := range flat {
				flat[i] = float32(rng.NormFloat64())
			}
		})
		return t
	}
	q, k, v := fill(B, KV, G, T, D), fill(B, KV, T, D), fill(B, KV, T, D)
	for _, c := range []struct {
		name string
		attn func(q, k, v, allowed, fill *Node) *Node
	}{{"full", fullAttention}, {"blocked", selfAttention}} {
		b.Run(c.name, func(b *testing.B) {
			e, err := NewExec(backend, func(q, k, v *Node) *Node {
				g := q.Graph()
				causal := LessOrEqual(Iota(g, shapes.Make(dtypes.Int32, T, T), 1), Iota(g, shapes.Make(dtypes.Int32, T, T), 0))
				allowed := BroadcastToDims(Reshape(causal, 1, T, T), B, T, T)
				return c.attn(q, k, v, allowed, Scalar(g, dtypes.Float32, -math.MaxFloat32))
			})
			require.NoError(b, err)
			_, err = e.Exec(q, k, v) // compile
			require.NoError(b, err)
			b.ResetTimer()
			for range b.N {
				outs, err := e.Exec(q, k, v)
				require.NoError(b, err)
				outs[0].FinalizeAll()
			}
		})
	}
}

// Forward splits a batch into two chains only when each gets forwardChunkTokens
// tokens (TestBucketedScoringMatchesOneAtATime scores such batches; the tiny train
// step, 8 rows of 128, is one).
func TestForwardChunks(t *testing.T) {
	require.Equal(t, 2, forwardChunks(16, 256))
	require.Equal(t, 2, forwardChunks(8, 1024))
	require.Equal(t, 2, forwardChunks(8, 128))
	require.Equal(t, 1, forwardChunks(4, 128), "two chains of 256 tokens are not worth it")
	require.Equal(t, 1, forwardChunks(1, 1024), "one sequence cannot be split")
}
