package model

import (
	"math"
	"strconv"
	"sync"

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
//
// Same function as HF, less work (see gpuworker/scripts/BENCH_TRAIN.md):
//   - q/k/v and gate/up projections run as one matmul each (weights concatenated);
//   - weight gradients and the attention's k/v gradients are written so the pure-Go
//     backend never transposes the large [B,T,·] / [B,heads,T,S] operands (its
//     DotGeneral otherwise transposes both operands of every weight gradient);
//   - the last layer computes queries, attention output, MLP and head only for the
//     pooled token (its keys/values still see every token): no other position of the
//     last layer can reach the reward.
//
// A batch of many tokens runs as independent chains of sequences (forwardChunks),
// which the backend's op-parallel execution runs side by side.
func (c *Config) Forward(params []*Node, ids, keyMask, pool *Node) *Node {
	B, T := ids.Shape().Dimensions[0], ids.Shape().Dimensions[1]
	n := forwardChunks(B, T)
	if n == 1 {
		return c.forward(params, ids, keyMask, pool)
	}
	parts := make([]*Node, n)
	for i := range n {
		rows := AxisRange(i*B/n, (i+1)*B/n)
		parts[i] = c.forward(params, SliceAxis(ids, 0, rows), SliceAxis(keyMask, 0, rows), SliceAxis(pool, 0, rows))
	}
	return Concatenate(parts, 0)
}

// noGradGraphs holds the graphs being built by ForwardNoGrad.
var noGradGraphs sync.Map // *Graph → struct{}

// ForwardNoGrad is Forward for a graph no gradient is taken of (the Scorer's). The
// custom-gradient routing of the forward (gradIdentity) and the gradient stop in
// after are left out of it: the pure-Go backend executes an Identity whose input has
// other users as a full copy, so in a scoring pass they only cost time and memory
// (Qwen3-0.6B shape, 8 layers, 8 × 1024 tokens: 292 MB of the 1.8 GB of activations
// live at the peak were such copies; BENCH_TRAIN.md, seventh pass).
func (c *Config) ForwardNoGrad(params []*Node, ids, keyMask, pool *Node) *Node {
	g := ids.Graph()
	noGradGraphs.Store(g, struct{}{})
	defer noGradGraphs.Delete(g)
	return c.Forward(params, ids, keyMask, pool)
}

func noGrad(g *Graph) bool {
	_, ok := noGradGraphs.Load(g)
	return ok
}

// gradIdentity is IdentityWithCustomGradient(x, grad), or x itself in a graph built by
// ForwardNoGrad.
func gradIdentity(x *Node, grad func(x, v *Node) *Node) *Node {
	if noGrad(x.Graph()) {
		return x
	}
	return IdentityWithCustomGradient(x, grad)
}

// forwardChunkTokens is the fewest padded tokens a chain of forwardChunks gets.
const forwardChunkTokens = 512

// forwardChunks is how many independent chains Forward splits a [B,T] batch into:
// two when each gets at least forwardChunkTokens tokens, else one. Why: compute
// v0.1.2 runs every element-wise op (norms, silu, softmax, masks, RoPE, slices) on
// one goroutine, and only its matmuls use every core; two chains let two of those ops
// run at once. Sequences never mix in the graph, so each one's reward is the same
// whichever chain it is in. The count does not depend on the machine, so a graph (and
// training's summation order) is the same on every CPU. Measured at 2 cores, same
// runs: the 64–1024 mix of make bench-score-engine (4 layers) 13.5–14.9 s against
// 16.2–19.6 s with chains only from 2048 tokens; the tiny train step (4 pairs × 128
// tokens, two chains of 512) 36.9–38.2 ms against 43.5–43.6 ms, and 3 % slower at one
// core (66–70 against 64–69 ms).
func forwardChunks(B, T int) int {
	if B >= 2 && B/2*T >= forwardChunkTokens {
		return 2
	}
	return 1
}

func (c *Config) forward(params []*Node, ids, keyMask, pool *Node) *Node {
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

	// Attention mask [B,T,S]: causal and key not padded.
	row := Iota(g, shapes.Make(dtypes.Int32, T, T), 0)
	col := Iota(g, shapes.Make(dtypes.Int32, T, T), 1)
	causal := LessOrEqual(col, row)                                           // [T,S]
	keyOK := GreaterThan(keyMask, ScalarZero(g, dtypes.Float32))              // [B,S]
	minF32 := Scalar(g, dtypes.Float32, -math.MaxFloat32)                     // scalar: the backend never materializes it
	allowed := LogicalAnd(BroadcastToDims(Reshape(causal, 1, T, T), B, T, T), // [B,T,S]
		BroadcastToDims(Reshape(keyOK, B, 1, T), B, T, T))

	cos, sin := ropeTables(g, T, D, c.RopeTheta)

	// Pooled-token selectors (exact: pool is one-hot).
	selectRows := func(v *Node) *Node { // v [B,T,...] -> [B,...]
		return DotGeneral(pool, []int{1}, []int{0}, v, []int{1}, []int{0})
	}
	last := c.NumHiddenLayers - 1

	for l := range c.NumHiddenLayers {
		pre := "model.layers." + strconv.Itoa(l) + "."
		pw := func(name string) *Node { return p[pre+name] }
		inNorm := pw("input_layernorm.weight")
		h := rmsScale(x, c.RMSNormEps) // the norm's weight is folded into the projections
		if l < last {
			qkv := fusedLinear(h, inNorm, []*Node{pw("self_attn.q_proj.weight"), pw("self_attn.k_proj.weight"), pw("self_attn.v_proj.weight")},
				[]*Node{pw("self_attn.q_proj.bias"), pw("self_attn.k_proj.bias"), pw("self_attn.v_proj.bias")})
			q := Reshape(qkv[0], B, T, nH, D)
			k := Reshape(qkv[1], B, T, nKV, D)
			v := Reshape(qkv[2], B, T, nKV, D)
			q = scaleQuery(q, pw("self_attn.q_norm.weight"), c)
			if c.QKNorm {
				k = rmsNorm(k, pw("self_attn.k_norm.weight"), c.RMSNormEps)
			}
			q = applyRope(q, cos, sin)
			k = applyRope(k, cos, sin)
			// Query heads h = kv*G + g share kv head kv, as HF's repeat_kv expands them.
			q = TransposeAllDims(Reshape(q, B, T, nKV, G, D), 0, 2, 3, 1, 4) // [B,KV,G,T,D]
			k = TransposeAllDims(k, 0, 2, 1, 3)                              // [B,KV,S,D]
			v = TransposeAllDims(v, 0, 2, 1, 3)                              // [B,KV,S,D]
			attn := selfAttention(q, k, v, allowed, minF32)                  // [B,KV,G,T,D]
			attn = Reshape(TransposeAllDims(attn, 0, 3, 1, 2, 4), B, T, nH*D)
			x = Add(x, linear(attn, pw("self_attn.o_proj.weight"), pw("self_attn.o_proj.bias")))
			x = mlp(x, p, pre, c.RMSNormEps)
			continue
		}

		// Last layer: keys/values for every token, everything else for the pooled one.
		kv := fusedLinear(h, inNorm, []*Node{pw("self_attn.k_proj.weight"), pw("self_attn.v_proj.weight")},
			[]*Node{pw("self_attn.k_proj.bias"), pw("self_attn.v_proj.bias")})
		k := Reshape(kv[0], B, T, nKV, D)
		v := Reshape(kv[1], B, T, nKV, D)
		xp := selectRows(x) // [B,H]
		hp := rmsScale(xp, c.RMSNormEps)
		q := Reshape(linear(hp, foldNorm(pw("self_attn.q_proj.weight"), after(inNorm, hp)), pw("self_attn.q_proj.bias")), B, 1, nH, D)
		q = scaleQuery(q, pw("self_attn.q_norm.weight"), c)
		if c.QKNorm {
			k = rmsNorm(k, pw("self_attn.k_norm.weight"), c.RMSNormEps)
		}
		posCos := Reshape(DotGeneral(pool, []int{1}, nil, cos, []int{0}, nil), B, 1, 1, D) // row of the pooled position
		posSin := Reshape(DotGeneral(pool, []int{1}, nil, sin, []int{0}, nil), B, 1, 1, D)
		q = rotate(q, BroadcastToDims(posCos, B, 1, nH, D), BroadcastToDims(posSin, B, 1, nH, D))
		k = applyRope(k, cos, sin)
		q = Reshape(q, B, nKV, G, 1, D)     // [B,KV,G,1,D]
		k = TransposeAllDims(k, 0, 2, 1, 3) // [B,KV,S,D]
		v = TransposeAllDims(v, 0, 2, 1, 3) // [B,KV,S,D]
		scores := attnScores(q, k)          // [B,KV,G,1,S], already scaled
		// Pooled query at position t sees keys s <= t that are not padding.
		causalF := ConvertDType(causal, dtypes.Float32)
		rowOK := GreaterThan(DotGeneral(pool, []int{1}, nil, causalF, []int{0}, nil), Scalar(g, dtypes.Float32, 0.5)) // [B,S]
		allowed := BroadcastToDims(Reshape(LogicalAnd(rowOK, keyOK), B, 1, 1, 1, T), B, nKV, G, 1, T)
		scores = masked(allowed, scores, minF32)
		attn := Reshape(attend(scores, v), B, nH*D) // [B,KV,G,1,D] is head-major already
		xp = Add(xp, linear(attn, pw("self_attn.o_proj.weight"), pw("self_attn.o_proj.bias")))
		x = mlp(xp, p, pre, c.RMSNormEps) // [B,H]
	}
	if c.NumHiddenLayers == 0 {
		x = selectRows(x)
	}
	x = rmsScale(x, c.RMSNormEps) // [B,H]; the final norm's weight is folded into the head
	return Reshape(linear(x, foldNorm(p[ScoreWeight], p["model.norm.weight"]), nil), B)
}

// scaleQuery applies the attention's 1/√D to the queries [..., D] instead of to the
// scores: the scores tensor is S/D times larger (8× for 1024 tokens of 128-wide heads),
// so this drops one full pass over it in the forward and one in the backward. With
// QK-norm the factor goes into the norm's [D] weight (free); otherwise one pass over q.
// RoPE is linear, so scaling before it is the same function.
func scaleQuery(q, qNormW *Node, c *Config) *Node {
	scale := 1 / math.Sqrt(float64(c.HeadDim))
	if c.QKNorm {
		return rmsNorm(q, MulScalar(qNormW, scale), c.RMSNormEps)
	}
	return MulScalar(q, scale)
}

// masked is Where(allowed, scores, fill) with the gradient passed through unchanged.
// Every user of it is the attention softmax, which gives a masked score a probability
// of exactly 0 (fill is −MaxFloat32), so the softmax's gradient p·(dp − Σ dp·p) is
// already exactly 0 there; the generic rule, Where(allowed, dy, 0), would copy a
// scores-sized tensor and fill another with zeros ([B,KV,G,T,S] each) to keep it so.
func masked(allowed, scores, fill *Node) *Node {
	return customGrad(scores, nil, func(sc, _ *Node) *Node {
		return Where(allowed, sc, fill)
	}, func(dy, _, _ *Node) *Node { return dy }, nil)
}

func mlp(x *Node, p map[string]*Node, pre string, eps float64) *Node {
	h := rmsScale(x, eps)
	gu := fusedLinear(h, p[pre+"post_attention_layernorm.weight"], []*Node{p[pre+"mlp.gate_proj.weight"], p[pre+"mlp.up_proj.weight"]}, []*Node{nil, nil})
	return Add(x, linear(Mul(silu(gu[0]), gu[1]), p[pre+"mlp.down_proj.weight"], nil))
}

// customGrad returns fwd(a, b) whose gradients with respect to a and b are aGrad(dy)
// and bGrad(dy) instead of the generic DotGeneral rule (a nil aGrad keeps the generic
// rule for a; an op of one operand passes a nil b and bGrad). It works by routing: the identity on the output records dy, the
// identities on a and b replace their incoming gradients (left dead and pruned by the
// compiler) with aGrad(dy) and bGrad(dy). Reverse autodiff visits the output identity
// first (it is created last).
//
// Why a's gradient too: GoMLX v0.28.2's dotGeneralVJP ends every operand gradient with
// a Transpose back to the operand's axis order, even when that permutation is the
// identity, and the pure-Go backend executes an identity Transpose as a full copy
// through its per-element iterator (~4 ns an element here: 1.6 M elements a tiny
// train step, ~6 % of it).
//
// The gradient functions get the routed a and b (the identities' outputs), not the
// originals: the backend executes an Identity as a hand-over of its input's buffer when
// it is that buffer's last user and as a full copy otherwise, so the backward must not
// keep the originals alive.
func customGrad(a, b *Node, fwd func(a, b *Node) *Node, aGrad, bGrad func(dy, a, b *Node) *Node) *Node {
	var dy, ac, bc *Node
	route := func(x *Node, grad func(dy, a, b *Node) *Node) *Node {
		if grad == nil {
			return x
		}
		return gradIdentity(x, func(_, _ *Node) *Node {
			if dy == nil {
				panic("customGrad: output gradient not recorded before the input's")
			}
			return grad(dy, ac, bc)
		})
	}
	ac, bc = route(a, aGrad), route(b, bGrad)
	y := fwd(ac, bc)
	return gradIdentity(y, func(_, v *Node) *Node {
		dy = v
		return v
	})
}

// linear is torch.nn.Linear: x @ w.T + b with w [out, in].
func linear(x, w, b *Node) *Node {
	r := x.Rank()
	y := customGrad(x, w, func(x, w *Node) *Node {
		return DotGeneral(x, []int{r - 1}, nil, w, []int{1}, nil)
	}, func(dy, _, w *Node) *Node { // dx = dy·w: [..., out]×[out, in], no transpose
		return DotGeneral(dy, []int{r - 1}, nil, w, []int{0}, nil)
	}, func(dy, x, _ *Node) *Node { return weightGrad(x, dy) })
	if b != nil {
		y = Add(y, ExpandLeftToRank(b, y.Rank()))
	}
	return y
}

// weightGrad is d loss / d w [out,in] for y = x @ w.T, given x [..., in] and dy [..., out]:
// sum over rows of dy ⊗ x. Written as a plain [M,K]x[K,N] matmul after transposing the
// narrower of x and dy, where the generic rule would transpose both.
func weightGrad(x, dy *Node) *Node {
	in, out := x.Shape().Dimensions[x.Rank()-1], dy.Shape().Dimensions[dy.Rank()-1]
	n := x.Shape().Size() / in
	x2, dy2 := Reshape(x, n, in), Reshape(dy, n, out)
	if in < out {
		wT := DotGeneral(Transpose(x2, 0, 1), []int{1}, nil, dy2, []int{0}, nil) // [in,out]
		return Transpose(wT, 0, 1)
	}
	return DotGeneral(Transpose(dy2, 0, 1), []int{1}, nil, x2, []int{0}, nil) // [out,in]
}

// fusedLinear applies several linears sharing the input x as one matmul over the
// concatenated weights (bias entries may be nil; all nil or all present). A non-nil
// normW is the weight of an RMSNorm applied to x just before (x is then rmsScale's
// output), folded into the concatenated weights (see foldNorm).
//
// The weights are folded and concatenated only once x exists (see after): they
// depend on nothing else, so an op-parallel backend would otherwise prepare every
// layer's at the start of the pass and hold them all at once (Qwen3-0.6B, 28 layers:
// 7.8 instead of 5 GiB peak).
func fusedLinear(x, normW *Node, ws, bs []*Node) []*Node {
	folded := ws
	if normW != nil {
		normW = after(normW, x)
		folded = make([]*Node, len(ws))
		for i, wi := range ws {
			folded[i] = foldNorm(wi, normW)
		}
	}
	w := folded[0]
	if len(ws) > 1 {
		w = Concatenate(folded, 0)
	}
	var b *Node
	if bs[0] != nil {
		b = bs[0]
		if len(bs) > 1 {
			b = Concatenate(bs, 0)
		}
	}
	sizes := make([]int, len(ws))
	for i, wi := range ws {
		sizes[i] = wi.Shape().Dimensions[0]
	}
	return splitLast(linear(x, w, b), sizes)
}

// splitLast cuts y along its last axis into parts of the given sizes. Its gradient is
// the parts' gradients concatenated (zeros for a part with none): one copy of y's
// size, where the generic rule pads every part's gradient to y's full shape and sums
// the pads (len(sizes) Pads and len(sizes)−1 Adds, each a pass over y). Routing as in
// customGrad: the parts' identities record their gradients, and y's identity (created
// first, so visited last) returns their concatenation instead of the padded sum, which
// is left dead and pruned.
func splitLast(y *Node, sizes []int) []*Node {
	r := y.Rank()
	dys := make([]*Node, len(sizes))
	parts := make([]*Node, len(sizes))
	yc := gradIdentity(y, func(_, _ *Node) *Node {
		grads := make([]*Node, len(sizes))
		for i, dy := range dys {
			if dy == nil {
				dy = ZerosLike(parts[i])
			}
			grads[i] = dy
		}
		return Concatenate(grads, r-1)
	})
	start := 0
	for i, n := range sizes {
		part := SliceAxis(yc, r-1, AxisRange(start, start+n))
		parts[i] = gradIdentity(part, func(_, v *Node) *Node { dys[i] = v; return v })
		start += n
	}
	return parts
}

// attnScores is q·k over D: q [B,KV,G,T,D], k [B,KV,S,D] -> [B,KV,G,T,S]. The k
// gradient is computed as (qᵀ·dy)ᵀ so only q (not the [T,S] gradient) is transposed.
//
// Every matmul here contracts the RHS over its *leading* non-batch axis
// ([B,N,K]×[B,K,M]), which is why the forward transposes k to [B,KV,D,S] first: the
// other layout the backend runs directly, [B,N,K]×[B,M,K], is executed below its
// small-matmul threshold (compute v0.1.2: N·M·K < 4 M, i.e. every per-head attention
// matmul of the tiny train config) by a kernel that ends each output element with a
// horizontal vector sum and scalar float adds. On the AVX2 path that measured
// 139 ns an output ([16,256,32]×[16,128,32]: 73 ms) against 9 ns for the same
// product as [16,256,32]×[16,32,128] (4.8 ms; 1 thread, AMD EPYC without AVX-512);
// transposing k ([8,128,2,32], 65 k elements) costs 0.45 ms. On the large-matmul path
// (the 0.6B shapes) both layouts are packed into the same panels.
func attnScores(q, k *Node) *Node {
	return customGrad(q, k, func(q, k *Node) *Node {
		kT := TransposeAllDims(k, 0, 1, 3, 2)                                  // [B,KV,D,S]
		return DotGeneral(q, []int{4}, []int{0, 1}, kT, []int{2}, []int{0, 1}) // [B,KV,G,T,S]
	}, func(dy, _, k *Node) *Node { // dq = dy·k: [B,KV,G,T,S]×[B,KV,S,D]
		return DotGeneral(dy, []int{4}, []int{0, 1}, k, []int{2}, []int{0, 1})
	}, func(dy, q, _ *Node) *Node {
		qT := TransposeAllDims(q, 0, 1, 4, 2, 3)                                      // [B,KV,D,G,T]
		dkT := DotGeneral(qT, []int{3, 4}, []int{0, 1}, dy, []int{2, 3}, []int{0, 1}) // [B,KV,D,S]
		return TransposeAllDims(dkT, 0, 1, 3, 2)
	})
}

// attend is softmax(scores)·v: scores [B,KV,G,T,S] (softmax over S), v [B,KV,S,D] ->
// o [B,KV,G,T,D], with both gradients written out:
//
//	dscores = p·(dp − δ), dp = do·vᵀ, δ = Σ_S dp·p = Σ_D do·o
//	dv      = (doᵀ·p)ᵀ
//
// Written from the probabilities p: the generic rule rebuilds the unfused softmax
// (an Exp per score). δ comes from the output (the FlashAttention identity
// Σ_s p_s·(do·v_s) = do·Σ_s p_s·v_s), a reduction over D of [B,KV,G,T,D] instead of a
// scores-sized product and reduction over S; and −δ joins the dp matmul as one more
// contracting row, [do | δ]·[vᵀ; −1], so the backward has no scores-sized broadcast
// Sub either (compute v0.1.2 runs any broadcast through a per-element index iterator,
// ~4.5 ns an element, against ~0.3 ns a multiply-add in the matmul). Per tiny train
// step that replaces three passes over 524 k scores by passes over 131 k outputs.
//
// The matmuls contract the RHS over its leading axis, v transposed to [B,KV,D,S] for
// dp (see attnScores); dv is computed as (doᵀ·p)ᵀ so p is never transposed.
func attend(scores, v *Node) *Node {
	var p, o *Node
	o = customGrad(scores, v, func(scores, v *Node) *Node {
		p = Softmax(scores, -1)
		return DotGeneral(p, []int{4}, []int{0, 1}, v, []int{2}, []int{0, 1})
	}, func(dy, _, v *Node) *Node {
		delta := ReduceAndKeep(Mul(dy, o), ReduceSum, -1)                               // [B,KV,G,T,1]
		vT := TransposeAllDims(v, 0, 1, 3, 2)                                           // [B,KV,D,S]
		d := vT.Shape().Dimensions                                                      //
		minus := BroadcastToDims(Scalar(v.Graph(), v.DType(), -1), d[0], d[1], 1, d[3]) // [B,KV,1,S]
		lhs := Concatenate([]*Node{dy, delta}, 4)                                       // [B,KV,G,T,D+1]
		rhs := Concatenate([]*Node{vT, minus}, 2)                                       // [B,KV,D+1,S]
		return Mul(p, DotGeneral(lhs, []int{4}, []int{0, 1}, rhs, []int{2}, []int{0, 1}))
	}, func(dy, _, _ *Node) *Node {
		dyT := TransposeAllDims(dy, 0, 1, 4, 2, 3)                                    // [B,KV,D,G,T]
		dvT := DotGeneral(dyT, []int{3, 4}, []int{0, 1}, p, []int{2, 3}, []int{0, 1}) // [B,KV,D,S]
		return TransposeAllDims(dvT, 0, 1, 3, 2)
	})
	return o
}

// rmsNorm matches HF's Qwen3RMSNorm/LlamaRMSNorm in float32:
// w * x * rsqrt(mean(x², -1) + eps).
func rmsNorm(x, w *Node, eps float64) *Node {
	y := rmsScale(x, eps)
	return Mul(y, ExpandLeftToRank(w, y.Rank()))
}

// rmsScale is RMSNorm without its weight: x * rsqrt(mean(x², -1) + eps).
func rmsScale(x *Node, eps float64) *Node {
	variance := ReduceAndKeep(Square(x), ReduceMean, -1)
	// 1/sqrt rather than Rsqrt: GoMLX v0.28.2 defines no gradient for Rsqrt.
	return Mul(x, Reciprocal(Sqrt(AddScalar(variance, eps))))
}

// after returns w unchanged, computed only once x is: Where(d > d, d, w) with d one
// element of x (d > d is false, NaN included), its gradient stopped. The pure-Go
// backend's op-parallel execution starts every op whose inputs are ready, so a
// weight-only computation (a fold, a concatenation) made to depend on the layer's
// input runs when the layer does instead of at the start of the pass.
func after(w, x *Node) *Node {
	d := x
	if !noGrad(x.Graph()) {
		d = StopGradient(x)
	}
	for axis := range d.Rank() {
		d = SliceAxis(d, axis, AxisRange(0, 1))
	}
	d = BroadcastToDims(Reshape(d), w.Shape().Dimensions...)
	return Where(GreaterThan(d, d), d, w)
}

// foldNorm returns the weight w [out, in] of a linear whose input is rmsScale(x), with
// the preceding RMSNorm's weight normW [in] folded in: (y ⊙ normW)·wᵀ = y·(w ⊙ normW)ᵀ.
// The broadcast multiply (and, in the backward, its gradient and the reduction for
// normW's) then runs over the weight instead of every token's activations: for the
// tiny train config 256 or 768 × 128 weight entries instead of 1024 tokens × 128, for
// 8 × 1024 tokens of the 0.6B shape 4096 or 6144 × 1024 instead of 8192 × 1024. Same
// function; only the rounding order of one product changes (HF rounds y ⊙ normW).
func foldNorm(w, normW *Node) *Node {
	return Mul(w, Reshape(normW, 1, normW.Shape().Dimensions[0]))
}

// silu is x·σ(x) with σ computed without math.Exp and the gradient written from σ:
// dy·σ·(1 + x·(1 − σ)).
//
// Why not GoMLX's Sigmoid: compute v0.1.2's own Logistic (and Exp) is one float64
// math.Exp per element, and in the GOEXPERIMENT=simd build that call runs ~130×
// slower on the OS thread that just ran an AVX-512/AVX2 kernel (compute never
// executes VZEROUPPER, and math.Exp's FMA path mixes VEX and legacy-SSE
// instructions; see gpuworker/scripts/BENCH_TRAIN.md). Where our executors are
// installed, Logistic is gpuworker/cpuops' float32 polynomial one; where they are
// not, σ(x) is the first row of softmax([x; 0]) over a new leading axis of 2 (the
// fused softmax's polynomial exp, relative error < 1e-7, no VEX/SSE mix).
func silu(x *Node) *Node {
	var s *Node
	return customGrad(x, nil, func(xc, _ *Node) *Node {
		s = sigmoid(xc)
		return Mul(xc, s)
	}, func(dy, _, _ *Node) *Node {
		one := ScalarOne(x.Graph(), x.DType())
		return Mul(dy, Mul(s, Add(one, Mul(x, Sub(one, s)))))
	}, nil)
}

// sigmoid is σ(x) = 1/(1 + e^−x): Logistic where that is fast, else softmax([x; 0])[0]
// through the fused softmax (see silu for why). Its own gradient is never taken: silu
// replaces it.
func sigmoid(x *Node) *Node {
	if fastLogistic(x.Graph().Backend()) {
		return Logistic(x)
	}
	dims := x.Shape().Dimensions
	flat := Reshape(x, 1, x.Shape().Size())
	pair := Concatenate([]*Node{flat, ZerosLike(flat)}, 0) // [2, N]
	s := SliceAxis(Softmax(pair, 0), 0, AxisRange(0, 1))
	return Reshape(s, dims...)
}

// ropeTables returns cos, sin [T, D] as HF's default rotary embedding computes them in
// float32: inv_freq = 1/theta^(2i/D), freqs = pos*inv_freq (f32 product), emb =
// cat(freqs, freqs). Rounding the product to f32 first matters at long positions.
// The first half of sin is stored negated, so rotate needs no Neg (see rotate).
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
			sin[t*D+i], sin[t*D+i+half] = -sv, sv
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
// rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2]); sin as ropeTables returns it.
func applyRope(x, cos, sin *Node) *Node {
	dims := x.Shape().Dimensions
	T, D := dims[1], dims[3]
	c := BroadcastToDims(Reshape(cos, 1, T, 1, D), dims...)
	s := BroadcastToDims(Reshape(sin, 1, T, 1, D), dims...)
	return rotate(x, c, s)
}

// rotate is x*c + rotate_half(x)*s for c, s already broadcast to x's shape [..., D],
// with s's first half negated (ropeTables): rotate_half(x)*s = cat(-x2, x1)*cat(s1, s2)
// = cat(x2, x1)*cat(-s1, s2), exactly, one element-wise pass (and its gradient) fewer.
//
// Its gradient is written out, dx = dy·c + swapHalves(dy·s): the swap is its own
// inverse, so the backward is two slices and a concatenation where the generic rule
// slices, pads each half back to x's full shape and adds the pads. c and s are never
// differentiated (tables of constants, or the pooled row of them). x's only user is
// the routing identity, so in the forward that identity hands x's buffer on (no copy).
func rotate(x, c, sSigned *Node) *Node {
	return customGrad(x, nil, func(xc, _ *Node) *Node {
		return Add(Mul(xc, c), Mul(swapHalves(xc), sSigned))
	}, func(dy, _, _ *Node) *Node {
		return Add(Mul(dy, c), swapHalves(Mul(dy, sSigned)))
	}, nil)
}

// swapHalves is cat(x[..., D/2:], x[..., :D/2]).
func swapHalves(x *Node) *Node {
	r := x.Rank()
	D := x.Shape().Dimensions[r-1]
	return Concatenate([]*Node{SliceAxis(x, r-1, AxisRange(D/2, D)), SliceAxis(x, r-1, AxisRange(0, D/2))}, r-1)
}
