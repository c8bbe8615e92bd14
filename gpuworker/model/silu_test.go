package model

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"
)

// silu (σ through cpuops' Logistic where our executors run, custom gradient; σ
// through the fused softmax is covered by the fallback test's golden runs with
// CRITIC_OPS=compute) equals x·σ(x) and its derivative
// σ·(1 + x·(1 − σ)) computed in float64, over the whole float32 range an activation
// sees, including saturated inputs where e^−x overflows or underflows float32.
func TestSiluMatchesFloat64(t *testing.T) {
	backend, err := NewBackend()
	require.NoError(t, err)
	xs := []float32{-1e4, -200, -88.5, -87, -40, -17, -5, -1.5, -0.3, -1e-3, 0, 1e-3, 0.3, 1.5, 5, 17, 40, 87, 88.5, 200, 1e4}
	for i := range 200 { // a dense grid over [-10, 10)
		xs = append(xs, float32(i-100)/10)
	}
	e, err := graph.NewExec(backend, func(x *graph.Node) []*graph.Node {
		y := silu(x)
		grad := graph.Gradient(graph.ReduceAllSum(y), x)[0]
		return []*graph.Node{y, grad}
	})
	require.NoError(t, err)
	outs, err := e.Exec(xs)
	require.NoError(t, err)
	ys := tensors.MustCopyFlatData[float32](outs[0])
	gs := tensors.MustCopyFlatData[float32](outs[1])
	for i, x := range xs {
		xf := float64(x)
		s := 1 / (1 + math.Exp(-xf))
		wantY, wantG := xf*s, s*(1+xf*(1-s))
		require.InDelta(t, wantY, float64(ys[i]), 1e-6*max(1, math.Abs(wantY)), "silu(%g)", x)
		require.InDelta(t, wantG, float64(gs[i]), 1e-6*max(1, math.Abs(wantG)), "silu'(%g)", x)
	}
}
