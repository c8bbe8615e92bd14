package train

import (
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph code reads better unqualified

	"github.com/criticml/critic/gpuworker/model"
)

// AdamW hyperparameters. Spec 002 fixes "AdamW, lr 1e-5"; everything else is
// torch.optim.AdamW's default (betas 0.9/0.999, eps 1e-8, weight_decay 0.01), applied to
// every parameter, as `AdamW(model.parameters(), lr=1e-5)` does.
type AdamW struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
}

// DefaultAdamW is torch.optim.AdamW's defaults with spec 002's learning rate.
func DefaultAdamW(lr float64) AdamW {
	return AdamW{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
}

// BTLoss is the mean Bradley–Terry loss −log σ(rc − rr) written as softplus(rr − rc),
// which never overflows or takes log(0).
func BTLoss(chosen, rejected *Node) *Node {
	return ReduceAllMean(Softplus(Sub(rejected, chosen)))
}

// LossAndGrads is the graph of a step's loss over one forward pass of
// [chosen..., rejected...] (its halves), the rewards and d loss/d param; the
// reference test builds it too.
func LossAndGrads(cfg *model.Config, params []*Node, ids, mask, pool *Node) (loss, rewards *Node, grads []*Node) {
	rewards = cfg.Forward(params, ids, mask, pool)
	n := rewards.Shape().Dimensions[0] / 2
	loss = BTLoss(SliceAxis(rewards, 0, AxisRange(0, n)), SliceAxis(rewards, 0, AxisRange(n, 2*n)))
	return loss, rewards, Gradient(loss, params...)
}

// stepGraph builds one training step with torch's AdamW update:
//
//	p ← p − lr·wd·p;  m ← β1 m + (1−β1) g;  v ← β2 v + (1−β2) g²
//	p ← p − (lr / (1−β1^t)) · m / (sqrt(v)/sqrt(1−β2^t) + eps)
//
// inputs: params, m, v (n each), t (float32 scalar step number, from 1), ids, mask, pool.
// outputs: new params, m, v, then loss and rewards.
func stepGraph(cfg *model.Config, opt AdamW, n int) func(g *Graph, in []*Node) []*Node {
	return func(g *Graph, in []*Node) []*Node {
		params, ms, vs := in[:n], in[n:2*n], in[2*n:3*n]
		t := in[3*n]
		ids, mask, pool := in[3*n+1], in[3*n+2], in[3*n+3]
		loss, rewards, grads := LossAndGrads(cfg, params, ids, mask, pool)
		one := ScalarOne(g, dtypes.Float32)
		bc1 := Sub(one, Pow(Scalar(g, dtypes.Float32, opt.Beta1), t))
		bc2 := Sub(one, Pow(Scalar(g, dtypes.Float32, opt.Beta2), t))
		stepSize := Div(Scalar(g, dtypes.Float32, opt.LR), bc1)
		sqrtBC2 := Sqrt(bc2)
		out := make([]*Node, 3*n+2) // new params, m, v, then loss and rewards
		for i := range n {
			p, gr := params[i], grads[i]
			p = Sub(p, MulScalar(p, opt.LR*opt.WeightDecay))
			m := Add(MulScalar(ms[i], opt.Beta1), MulScalar(gr, 1-opt.Beta1))
			v := Add(MulScalar(vs[i], opt.Beta2), MulScalar(Square(gr), 1-opt.Beta2))
			denom := AddScalar(Div(Sqrt(v), sqrtBC2), opt.Eps)
			out[i], out[n+i], out[2*n+i] = Sub(p, Mul(stepSize, Div(m, denom))), m, v
		}
		out[3*n], out[3*n+1] = loss, rewards
		return out
	}
}
