package model

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified
)

// Forward builds the reward graph of HF's <Family>ForSequenceClassification:
//
//	params: one node per c.ParamSpecs() entry, same order
//	ids:    [B, T] int32 token ids, right-padded
//	keyMask:[B, T] float32, 1 for real tokens (the attention_mask)
//	pool:   [B, T] float32 one-hot of the token whose logit is the reward (see PoolIndex)
//
// It returns the rewards [B]. Attention is causal and ignores padded keys; RoPE
// positions are 0..T-1 regardless of padding, as HF computes them for right padding.
func (c *Config) Forward(params []*Node, ids, keyMask, pool *Node) *Node {
	g := ids.Graph()
	p := make(map[string]*Node, len(params))
	for i, s := range c.ParamSpecs() {
		p[s.Name] = params[i]
	}
	B, T := ids.Shape().Dimensions[0], ids.Shape().Dimensions[1]
	D := c.HeadDim
	nH, nKV := c.NumAttentionHeads, c.NumKeyValueHeads
	G := nH / nKV

	x := Gather(p["model.embed_tokens.weight"], ExpandAxes(ids, -1)) // [B,T,H]

	// Attention mask [B,1,1,T,S]: causal and key not padded.
	row := Iota(g, shapes.Make(dtypes.Int32, T, T), 0)
	col := Iota(g, shapes.Make(dtypes.Int32, T, T), 1)
	causal := LessOrEqual(col, row)                                           // [T,S]
	keyOK := GreaterThan(keyMask, ScalarZero(g, dtypes.Float32))              // [B,S]
	allowed := LogicalAnd(BroadcastToDims(Reshape(causal, 1, T, T), B, T, T), // [B,T,S]
		BroadcastToDims(Reshape(keyOK, B, 1, T), B, T, T))
	allowed = BroadcastToDims(Reshape(allowed, B, 1, 1, T, T), B, nKV, G, T, T)
	minF32 := Scalar(g, dtypes.Float32, -math.MaxFloat32)

	cos, sin := ropeTables(g, T, D, c.RopeTheta)

	for l := range c.NumHiddenLayers {
		pre := "model.layers." + itoa(l) + "."
		h := rmsNorm(x, p[pre+"input_layernorm.weight"], c.RMSNormEps)
		q := linear(h, p[pre+"self_attn.q_proj.weight"], p[pre+"self_attn.q_proj.bias"])
		k := linear(h, p[pre+"self_attn.k_proj.weight"], p[pre+"self_attn.k_proj.bias"])
		v := linear(h, p[pre+"self_attn.v_proj.weight"], p[pre+"self_attn.v_proj.bias"])
		q = Reshape(q, B, T, nH, D)
		k = Reshape(k, B, T, nKV, D)
		v = Reshape(v, B, T, nKV, D)
		if c.QKNorm {
			q = rmsNorm(q, p[pre+"self_attn.q_norm.weight"], c.RMSNormEps)
			k = rmsNorm(k, p[pre+"self_attn.k_norm.weight"], c.RMSNormEps)
		}
		q = applyRope(q, cos, sin)
		k = applyRope(k, cos, sin)
		// Query heads h = kv*G + g share kv head kv, as HF's repeat_kv expands them.
		q = TransposeAllDims(Reshape(q, B, T, nKV, G, D), 0, 2, 3, 1, 4)         // [B,KV,G,T,D]
		k = TransposeAllDims(k, 0, 2, 1, 3)                                      // [B,KV,S,D]
		v = TransposeAllDims(v, 0, 2, 1, 3)                                      // [B,KV,S,D]
		scores := DotGeneral(q, []int{4}, []int{0, 1}, k, []int{3}, []int{0, 1}) // [B,KV,G,T,S]
		scores = MulScalar(scores, 1/math.Sqrt(float64(D)))
		scores = Where(allowed, scores, BroadcastToDims(minF32, B, nKV, G, T, T))
		probs := Softmax(scores, -1)
		attn := DotGeneral(probs, []int{4}, []int{0, 1}, v, []int{2}, []int{0, 1}) // [B,KV,G,T,D]
		attn = Reshape(TransposeAllDims(attn, 0, 3, 1, 2, 4), B, T, nH*D)
		x = Add(x, linear(attn, p[pre+"self_attn.o_proj.weight"], p[pre+"self_attn.o_proj.bias"]))

		h = rmsNorm(x, p[pre+"post_attention_layernorm.weight"], c.RMSNormEps)
		gate := linear(h, p[pre+"mlp.gate_proj.weight"], nil)
		up := linear(h, p[pre+"mlp.up_proj.weight"], nil)
		x = Add(x, linear(Mul(silu(gate), up), p[pre+"mlp.down_proj.weight"], nil))
	}
	x = rmsNorm(x, p["model.norm.weight"], c.RMSNormEps)
	logits := Reshape(linear(x, p[ScoreWeight], nil), B, T)
	return ReduceSum(Mul(logits, pool), 1)
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// linear is torch.nn.Linear: x @ w.T + b with w [out, in].
func linear(x, w, b *Node) *Node {
	r := x.Rank()
	y := DotGeneral(x, []int{r - 1}, nil, w, []int{1}, nil)
	if b != nil {
		y = Add(y, ExpandLeftToRank(b, y.Rank()))
	}
	return y
}

// rmsNorm matches HF's Qwen3RMSNorm/LlamaRMSNorm in float32:
// w * x * rsqrt(mean(x², -1) + eps).
func rmsNorm(x, w *Node, eps float64) *Node {
	variance := ReduceAndKeep(Square(x), ReduceMean, -1)
	// 1/sqrt rather than Rsqrt: GoMLX v0.28.2 defines no gradient for Rsqrt.
	y := Mul(x, Reciprocal(Sqrt(AddScalar(variance, eps))))
	return Mul(y, ExpandLeftToRank(w, y.Rank()))
}

func silu(x *Node) *Node { return Mul(x, Sigmoid(x)) }

// ropeTables returns cos, sin [T, D] as HF's default rotary embedding computes them in
// float32: inv_freq = 1/theta^(2i/D), freqs = pos*inv_freq (f32 product), emb =
// cat(freqs, freqs). Rounding the product to f32 first matters at long positions.
func ropeTables(g *Graph, T, D int, theta float64) (*Node, *Node) {
	cos := make([]float32, T*D)
	sin := make([]float32, T*D)
	half := D / 2
	for i := range half {
		invFreq := float32(1.0 / float64(float32(math.Pow(theta, float64(float32(2*i)/float32(D))))))
		for t := range T {
			f := float64(float32(t) * invFreq)
			cv, sv := float32(math.Cos(f)), float32(math.Sin(f))
			cos[t*D+i], cos[t*D+i+half] = cv, cv
			sin[t*D+i], sin[t*D+i+half] = sv, sv
		}
	}
	return Const(g, reshape2(cos, T, D)), Const(g, reshape2(sin, T, D))
}

func reshape2(flat []float32, rows, cols int) [][]float32 {
	out := make([][]float32, rows)
	for r := range rows {
		out[r] = flat[r*cols : (r+1)*cols]
	}
	return out
}

// applyRope rotates x [B,T,heads,D] as HF: x*cos + rotate_half(x)*sin with
// rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2]).
func applyRope(x, cos, sin *Node) *Node {
	dims := x.Shape().Dimensions
	T, D := dims[1], dims[3]
	c := BroadcastToDims(Reshape(cos, 1, T, 1, D), dims...)
	s := BroadcastToDims(Reshape(sin, 1, T, 1, D), dims...)
	x1 := SliceAxis(x, 3, AxisRange(0, D/2))
	x2 := SliceAxis(x, 3, AxisRange(D/2, D))
	rot := Concatenate([]*Node{Neg(x2), x1}, 3)
	return Add(Mul(x, c), Mul(rot, s))
}
