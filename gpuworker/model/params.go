package model

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
)

// ScoreWeight is the HF name of the reward head ([1, hidden], no bias).
const ScoreWeight = "score.weight"

type initKind int

const (
	initNormal initKind = iota // normal(0, initializer_range), as HF _init_weights does for Linear/Embedding
	initOnes                   // RMSNorm weights
	initZeros                  // biases
)

// ParamSpec is one trainable tensor under its Hugging Face name.
type ParamSpec struct {
	Name  string
	Shape []int
	init  initKind
}

// Size is the number of elements.
func (p ParamSpec) Size() int {
	return numElements(p.Shape)
}

// numElements is the number of elements of an array of shape dims (1 for a scalar).
func numElements(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// ParamSpecs lists the classifier's parameters in a fixed order (the order of graph
// inputs). The LM head is not part of a sequence classifier and is never listed.
func (c *Config) ParamSpecs() []ParamSpec {
	h, d := c.HiddenSize, c.HeadDim
	qDim, kvDim := c.NumAttentionHeads*d, c.NumKeyValueHeads*d
	specs := []ParamSpec{{"model.embed_tokens.weight", []int{c.VocabSize, h}, initNormal}}
	for l := range c.NumHiddenLayers {
		p := fmt.Sprintf("model.layers.%d.", l)
		add := func(name string, init initKind, shape ...int) {
			specs = append(specs, ParamSpec{p + name, shape, init})
		}
		add("input_layernorm.weight", initOnes, h)
		addQKV := func(proj string, out int) {
			add("self_attn."+proj+"_proj.weight", initNormal, out, h)
			if c.AttentionBias {
				add("self_attn."+proj+"_proj.bias", initZeros, out)
			}
		}
		addQKV("q", qDim)
		addQKV("k", kvDim)
		addQKV("v", kvDim)
		add("self_attn.o_proj.weight", initNormal, h, qDim)
		if c.OutputBias {
			add("self_attn.o_proj.bias", initZeros, h)
		}
		if c.QKNorm {
			add("self_attn.q_norm.weight", initOnes, d)
			add("self_attn.k_norm.weight", initOnes, d)
		}
		add("post_attention_layernorm.weight", initOnes, h)
		add("mlp.gate_proj.weight", initNormal, c.IntermediateSize, h)
		add("mlp.up_proj.weight", initNormal, c.IntermediateSize, h)
		add("mlp.down_proj.weight", initNormal, h, c.IntermediateSize)
	}
	specs = append(specs,
		ParamSpec{"model.norm.weight", []int{h}, initOnes},
		ParamSpec{ScoreWeight, []int{1, h}, initNormal})
	return specs
}

// Model is a sequence classifier's configuration and weights. Weights live in backend
// buffers (shared host memory on the Go backend), created once and filled in place,
// so loading a model costs one copy of its float32 weights.
type Model struct {
	Config  *Config
	Specs   []ParamSpec
	Params  []*tensors.Tensor
	Backend compute.Backend
}

// Load reads a HF model directory. A base without score.weight (a causal LM) gets a
// new head drawn from normal(0, initializer_range) with a PCG generator seeded by seed,
// so a fixed seed gives a fixed initial reward model.
func Load(backend compute.Backend, dir string, seed uint64) (*Model, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x5c0e))
	return newModel(backend, cfg, func(spec ParamSpec, t *tensors.Tensor) error {
		ti, ok := ck.Tensors[spec.Name]
		switch {
		case !ok && spec.Name == ScoreWeight:
			fillInit(t, spec, cfg.InitializerRange, rng)
			return nil
		case !ok:
			return fmt.Errorf("%s: checkpoint has no tensor %q", dir, spec.Name)
		case !slices.Equal(ti.Shape, spec.Shape):
			return fmt.Errorf("%s: tensor %s has shape %v, config implies %v", dir, spec.Name, ti.Shape, spec.Shape)
		}
		var rerr error
		tensors.MustMutableFlatData(t, func(flat []float32) { rerr = ck.ReadF32(spec.Name, flat) })
		return rerr
	})
}

// NewRandom builds a model with HF-style random initialisation (used by `critic model
// init` for tiny test bases and by benchmarks; weights are written in place, never
// materialised twice).
func NewRandom(backend compute.Backend, cfg *Config, seed uint64) (*Model, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5c0e))
	return newModel(backend, cfg, func(spec ParamSpec, t *tensors.Tensor) error {
		fillInit(t, spec, cfg.InitializerRange, rng)
		return nil
	})
}

// newModel creates cfg's parameters as backend buffers, in ParamSpecs order, and
// fills each in place with fill.
func newModel(backend compute.Backend, cfg *Config, fill func(ParamSpec, *tensors.Tensor) error) (*Model, error) {
	m := &Model{Config: cfg, Specs: cfg.ParamSpecs(), Backend: backend}
	for _, spec := range m.Specs {
		t, err := tensors.FromShapeForBackend(backend, 0, shapes.Make(dtypes.Float32, spec.Shape...))
		if err != nil {
			return nil, err
		}
		if err := fill(spec, t); err != nil {
			return nil, err
		}
		m.Params = append(m.Params, t)
	}
	return m, nil
}

func fillInit(t *tensors.Tensor, spec ParamSpec, std float64, rng *rand.Rand) {
	tensors.MustMutableFlatData(t, func(flat []float32) {
		for i := range flat {
			if i%4096 == 0 {
				// NormFloat64 calls math.Exp: keep this thread (which may just have run
				// a SIMD matmul, or may be another after a reschedule) clean of dirty
				// upper vector state. See clearAVXUpper.
				clearAVXUpper()
			}
			switch spec.init {
			case initNormal:
				flat[i] = float32(rng.NormFloat64() * std)
			case initOnes:
				flat[i] = 1
			case initZeros:
				flat[i] = 0
			}
		}
	})
}

// Param returns the tensor named name, or nil.
func (m *Model) Param(name string) *tensors.Tensor {
	if i := slices.IndexFunc(m.Specs, func(s ParamSpec) bool { return s.Name == name }); i >= 0 {
		return m.Params[i]
	}
	return nil
}

// SaveWeights writes model.safetensors (F32, HF names). includeScore=false writes a
// causal-LM base (tied embeddings, so no lm_head tensor either).
func (m *Model) SaveWeights(path string, includeScore bool) error {
	var ws []WriteTensor
	for i, spec := range m.Specs {
		if spec.Name == ScoreWeight && !includeScore {
			continue
		}
		t := m.Params[i]
		ws = append(ws, WriteTensor{Name: spec.Name, Shape: spec.Shape, Data: func(w io.Writer) error {
			var werr error
			if err := t.ConstBytes(func(b []byte) { _, werr = w.Write(b) }); err != nil {
				return err
			}
			return werr
		}})
	}
	return WriteSafetensors(path, ws)
}

// SaveClassifier writes config.json and model.safetensors for a directory that
// transformers loads as <Family>ForSequenceClassification with one label.
func (m *Model) SaveClassifier(dir string) error {
	cfgJSON, err := m.Config.ClassifierConfigJSON()
	if err != nil {
		return err
	}
	return m.saveDir(dir, cfgJSON, true)
}

// saveDir creates dir and writes config.json (cfgJSON) and model.safetensors into it.
func (m *Model) saveDir(dir string, cfgJSON []byte, includeScore bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfgJSON, 0o644); err != nil {
		return err
	}
	return m.SaveWeights(filepath.Join(dir, "model.safetensors"), includeScore)
}

// TokenizerFiles are copied from the base into a saved checkpoint when present.
var TokenizerFiles = []string{
	"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
	"vocab.json", "merges.txt", "chat_template.jinja", "generation_config.json",
}

// CopyTokenizerFiles copies the base's tokenizer files (and chat template) to dst;
// tokenizer.json is required because scoring needs it.
func CopyTokenizerFiles(src, dst string) error {
	for _, name := range TokenizerFiles {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			if os.IsNotExist(err) && name != "tokenizer.json" {
				continue
			}
			return fmt.Errorf("copying tokenizer files: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Finalize frees the weights' buffers.
func (m *Model) Finalize() {
	for _, t := range m.Params {
		t.FinalizeAll()
	}
	m.Params = nil
}

// SaveBase writes a causal-LM base directory (config.json as given, weights without
// the score head) — what a downloaded HF base looks like.
func (m *Model) SaveBase(dir string) error {
	data, err := json.MarshalIndent(m.Config.Raw, "", "  ")
	if err != nil {
		return err
	}
	return m.saveDir(dir, data, false)
}
