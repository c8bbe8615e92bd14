package train

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/model/modeltest"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite gpuworker/testdata/golden from torch_reference.py")

const goldenDir = "../testdata/golden"

type goldenRequest struct {
	ModelDir   string   `json:"model_dir"`
	Chosen     [][]int  `json:"chosen"`
	Rejected   [][]int  `json:"rejected"`
	GradParams []string `json:"grad_params"`
}

type goldenResult struct {
	RewardsChosen   []float64            `json:"rewards_chosen"`
	RewardsRejected []float64            `json:"rewards_rejected"`
	Loss            float64              `json:"loss"`
	Grads           map[string][]float64 `json:"grads"`
}

func goldenReq(modelDir string) goldenRequest {
	seq := func(n, start int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = 1 + (start+7*i)%63 // never the pad id 0
		}
		return s
	}
	return goldenRequest{
		ModelDir: modelDir,
		// Different lengths so padding, the causal mask and RoPE all matter.
		Chosen:   [][]int{seq(37, 3), seq(5, 11), seq(20, 1)},
		Rejected: [][]int{seq(12, 9), seq(40, 2), seq(1, 5)},
		GradParams: []string{"score.weight", "model.norm.weight", "model.layers.1.self_attn.q_norm.weight",
			"model.layers.0.self_attn.k_proj.weight", "model.layers.1.mlp.down_proj.weight", "model.embed_tokens.weight"},
	}
}

// torchPython finds a python3 with torch: $CRITIC_PYTHON, python3 on PATH, then
// Debian's /usr/bin/python3 (pyenv shims often shadow the one with python3-torch).
func torchPython() string {
	for _, py := range []string{os.Getenv("CRITIC_PYTHON"), "python3", "/usr/bin/python3"} {
		if py != "" && exec.Command(py, "-c", "import torch").Run() == nil {
			return py
		}
	}
	return ""
}

func hasTorch() bool { return torchPython() != "" }

func runTorch(t *testing.T, req goldenRequest) goldenResult {
	t.Helper()
	in, err := json.Marshal(req)
	require.NoError(t, err)
	cmd := exec.Command(torchPython(), "../scripts/torch_reference.py", "golden")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var res goldenResult
	require.NoError(t, json.Unmarshal(out, &res))
	return res
}

// goRef computes the same quantities with the Go model.
func goRef(t *testing.T, req goldenRequest) goldenResult {
	t.Helper()
	backend, err := model.NewBackend() // the gradients as a training run computes them
	require.NoError(t, err)
	m, err := model.Load(backend, req.ModelDir, 0)
	require.NoError(t, err)
	defer m.Finalize()
	n := len(m.Specs)
	idx := map[string]int{}
	for i, s := range m.Specs {
		idx[s.Name] = i
	}
	b := model.MakeBatch(append(append([][]int{}, req.Chosen...), req.Rejected...), m.PadID())
	e, err := graph.NewExec(backend, func(in []*graph.Node) []*graph.Node {
		loss, rewards, grads := LossAndGrads(m.Config, in[:n], in[n], in[n+1], in[n+2])
		out := []*graph.Node{loss, rewards}
		for _, name := range req.GradParams {
			out = append(out, grads[idx[name]])
		}
		return out
	})
	require.NoError(t, err)
	outs, err := e.Exec(batchArgs(m.Params, b)...)
	require.NoError(t, err)
	f64 := func(x *tensors.Tensor) []float64 {
		var r []float64
		for _, v := range tensors.MustCopyFlatData[float32](x) {
			r = append(r, float64(v))
		}
		return r
	}
	rw := f64(outs[1])
	k := len(req.Chosen)
	res := goldenResult{RewardsChosen: rw[:k], RewardsRejected: rw[k:], Loss: f64(outs[0])[0], Grads: map[string][]float64{}}
	for i, name := range req.GradParams {
		res.Grads[name] = f64(outs[2+i])
	}
	return res
}

func requireClose(t *testing.T, want, got goldenResult, tol float64) {
	t.Helper()
	var worst float64
	upd := func(a, b []float64) {
		for i := range min(len(a), len(b)) {
			worst = max(worst, abs(a[i]-b[i]))
		}
	}
	upd(want.RewardsChosen, got.RewardsChosen)
	upd(want.RewardsRejected, got.RewardsRejected)
	for name, g := range want.Grads {
		upd(g, got.Grads[name])
	}
	t.Logf("max |torch − go| = %.3g (rewards %v, loss %.6f)", worst, want.RewardsChosen, want.Loss)
	require.InDeltaSlice(t, want.RewardsChosen, got.RewardsChosen, tol)
	require.InDeltaSlice(t, want.RewardsRejected, got.RewardsRejected, tol)
	require.InDelta(t, want.Loss, got.Loss, tol)
	require.Equal(t, len(want.Grads), len(got.Grads))
	for name, g := range want.Grads {
		require.InDeltaSlice(t, g, got.Grads[name], tol, name)
	}
}

// TestTorchGolden checks forward rewards, BT loss and gradients against numbers a plain
// PyTorch implementation produced from the same committed safetensors.
func TestTorchGolden(t *testing.T) {
	modelDir := filepath.Join(goldenDir, "tiny-qwen3")
	if *updateGolden {
		require.True(t, hasTorch(), "regenerating the golden needs python3 with torch")
		backend, err := model.NewBackend()
		require.NoError(t, err)
		spec := modeltest.Tiny()
		spec.PadTokenID = 0
		cfg, err := model.NewBaseConfig(spec)
		require.NoError(t, err)
		cfg.InitializerRange = 0.2 // large weights so the rewards are far from zero
		m, err := model.NewRandom(backend, cfg, 42)
		require.NoError(t, err)
		require.NoError(t, m.SaveClassifier(modelDir))
		res := runTorch(t, goldenReq(modelDir))
		data, err := json.MarshalIndent(res, "", " ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(goldenDir, "tiny-qwen3.golden.json"), data, 0o644))
	}
	var want goldenResult
	data, err := os.ReadFile(filepath.Join(goldenDir, "tiny-qwen3.golden.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &want))
	got := goRef(t, goldenReq(modelDir))
	t.Logf("CPU kernels: %s", model.CPUKernels())
	t.Logf("float32 matmul: %s", model.MatmulKernel())
	t.Logf("ops: %s", model.ExecutorsStatus())
	requireClose(t, want, got, 1e-4)
	require.Greater(t, abs(want.RewardsChosen[0]-want.RewardsRejected[0]), 1e-3, "golden must not be degenerate")
}

// TestTorchLiveFamilies runs the torch reference on fresh random Qwen2 and Llama
// models (and Qwen3); skipped without torch.
func TestTorchLiveFamilies(t *testing.T) {
	if !hasTorch() {
		t.Skip("python3 with torch not available")
	}
	for _, fam := range []model.Family{model.FamilyQwen3, model.FamilyQwen2, model.FamilyLlama} {
		t.Run(fam.String(), func(t *testing.T) {
			backend, err := model.NewBackend()
			require.NoError(t, err)
			spec := modeltest.Tiny()
			spec.Family, spec.PadTokenID = fam, 0
			if fam == model.FamilyQwen2 {
				spec.HeadDim = spec.Hidden / spec.Heads
			}
			cfg, err := model.NewBaseConfig(spec)
			require.NoError(t, err)
			cfg.InitializerRange = 0.2
			m, err := model.NewRandom(backend, cfg, 3)
			require.NoError(t, err)
			// Non-zero biases so the bias path is checked too.
			for i, s := range m.Specs {
				if filepath.Ext(s.Name) == ".bias" {
					tensors.MustMutableFlatData(m.Params[i], func(f []float32) {
						for j := range f {
							f[j] = 0.1 * float32(j%5-2)
						}
					})
				}
			}
			dir := t.TempDir()
			require.NoError(t, m.SaveClassifier(dir))
			req := goldenReq(dir)
			req.GradParams = req.GradParams[:0]
			for _, name := range goldenReq(dir).GradParams {
				if m.Param(name) != nil {
					req.GradParams = append(req.GradParams, name)
				}
			}
			// q_proj through attention; gate/up through silu (its custom gradient).
			req.GradParams = append(req.GradParams, "model.layers.0.self_attn.q_proj.weight",
				"model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight")
			if cfg.AttentionBias {
				req.GradParams = append(req.GradParams, "model.layers.0.self_attn.v_proj.bias")
			}
			requireClose(t, runTorch(t, req), goRef(t, req), 1e-4)
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// batchArgs is params followed by the batch tensors, as graph arguments.
func batchArgs(ps []*tensors.Tensor, b model.Batch) []any {
	args := make([]any, 0, len(ps)+3)
	for _, p := range ps {
		args = append(args, p)
	}
	return append(args, b.IDs, b.KeyMask, b.Pool)
}
