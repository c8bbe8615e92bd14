// Package model loads Hugging Face decoder-only checkpoints (Qwen3, Qwen2, Llama) as
// single-output sequence classifiers — the exact shape of
// AutoModelForSequenceClassification(num_labels=1) — runs them in GoMLX, and saves
// checkpoints that transformers loads unchanged.
package model

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Family selects the architectural switches that differ between the supported
// decoder families. They share everything else (RMSNorm, RoPE, GQA, SwiGLU).
type Family int

const (
	FamilyQwen3 Family = iota // q/k RMSNorm per head, attention_bias from config (default false)
	FamilyQwen2               // bias on q/k/v projections, no q/k norm
	FamilyLlama               // attention_bias from config applies to q/k/v/o, no q/k norm
)

func (f Family) String() string {
	return [...]string{"qwen3", "qwen2", "llama"}[f]
}

// familyPrefix is how HF spells a family in its architecture names
// (<prefix>ForCausalLM, <prefix>ForSequenceClassification).
var familyPrefix = map[Family]string{FamilyQwen3: "Qwen3", FamilyQwen2: "Qwen2", FamilyLlama: "Llama"}

// supportedArchitectures maps the HF "architectures" entry to a family. Both the
// causal-LM base and the sequence classifier are accepted: the LM head is dropped and
// a base without a score head gets a fresh one.
var supportedArchitectures = map[string]Family{
	"Qwen3ForCausalLM":               FamilyQwen3,
	"Qwen3ForSequenceClassification": FamilyQwen3,
	"Qwen2ForCausalLM":               FamilyQwen2,
	"Qwen2ForSequenceClassification": FamilyQwen2,
	"LlamaForCausalLM":               FamilyLlama,
	"LlamaForSequenceClassification": FamilyLlama,
}

// Config is the subset of a HF config.json the forward pass needs. Raw keeps every
// original key so a saved checkpoint carries the base's config through unchanged
// (transformers reads keys we do not model, e.g. torch_dtype, bos_token_id).
type Config struct {
	Architecture          string
	Family                Family
	HiddenSize            int     `json:"hidden_size"`
	NumHiddenLayers       int     `json:"num_hidden_layers"`
	NumAttentionHeads     int     `json:"num_attention_heads"`
	NumKeyValueHeads      int     `json:"num_key_value_heads"`
	HeadDim               int     `json:"head_dim"`
	IntermediateSize      int     `json:"intermediate_size"`
	RMSNormEps            float64 `json:"rms_norm_eps"`
	RopeTheta             float64 `json:"rope_theta"`
	VocabSize             int     `json:"vocab_size"`
	TieWordEmbeddings     bool    `json:"tie_word_embeddings"`
	InitializerRange      float64 `json:"initializer_range"`
	MaxPositionEmbeddings int     `json:"max_position_embeddings"`
	// PadTokenID is -1 when the config has none (Qwen3 base configs do not set it).
	PadTokenID int
	// AttentionBias: q/k/v (and o for Llama) projections carry a bias.
	AttentionBias bool
	// OutputBias: o_proj carries a bias (Llama with attention_bias only).
	OutputBias bool
	// QKNorm: per-head RMSNorm on queries and keys before RoPE (Qwen3).
	QKNorm bool

	Raw map[string]any
}

// ParseConfig validates a config.json body. Unsupported architectures and features we
// would silently get wrong (rope scaling, sliding windows, MLP bias) are errors that
// name the offending value.
func ParseConfig(data []byte) (*Config, error) {
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	c := &Config{Raw: raw, PadTokenID: -1, RMSNormEps: 1e-6, RopeTheta: 10000, InitializerRange: 0.02}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	archs, _ := raw["architectures"].([]any)
	if len(archs) == 0 {
		return nil, fmt.Errorf("config.json: no \"architectures\" entry")
	}
	c.Architecture, _ = archs[0].(string)
	fam, ok := supportedArchitectures[c.Architecture]
	if !ok {
		names := slices.Sorted(maps.Keys(supportedArchitectures))
		return nil, fmt.Errorf("unsupported architecture %q (supported: %v)", c.Architecture, names)
	}
	c.Family = fam
	if v, ok := raw["pad_token_id"].(float64); ok {
		c.PadTokenID = int(v)
	}
	c.NumKeyValueHeads = cmp.Or(c.NumKeyValueHeads, c.NumAttentionHeads)
	if c.HeadDim == 0 && c.NumAttentionHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	attnBias, _ := raw["attention_bias"].(bool)
	switch fam {
	case FamilyQwen3:
		c.QKNorm = true
		c.AttentionBias = attnBias
	case FamilyQwen2:
		c.AttentionBias = true
	case FamilyLlama:
		c.AttentionBias = attnBias
		c.OutputBias = attnBias
	}
	if rs, ok := raw["rope_scaling"]; ok && rs != nil {
		if m, ok := rs.(map[string]any); !ok || (m["rope_type"] != "default" && m["type"] != "default") {
			return nil, fmt.Errorf("config.json: rope_scaling %v is not supported", rs)
		}
	}
	if sw, _ := raw["use_sliding_window"].(bool); sw {
		return nil, fmt.Errorf("config.json: use_sliding_window=true is not supported")
	}
	if mb, _ := raw["mlp_bias"].(bool); mb {
		return nil, fmt.Errorf("config.json: mlp_bias=true is not supported")
	}
	if act, ok := raw["hidden_act"].(string); ok && act != "silu" {
		return nil, fmt.Errorf("config.json: hidden_act %q is not supported (only silu)", act)
	}
	if nl, ok := raw["num_labels"].(float64); ok && nl != 1 {
		return nil, fmt.Errorf("config.json: num_labels=%v, a reward model needs 1", nl)
	}
	if id2l, ok := raw["id2label"].(map[string]any); ok && len(id2l) > 1 &&
		strings.HasSuffix(c.Architecture, "ForSequenceClassification") {
		return nil, fmt.Errorf("config.json: %d labels, a reward model needs 1", len(id2l))
	}
	for name, v := range map[string]int{
		"hidden_size": c.HiddenSize, "num_hidden_layers": c.NumHiddenLayers,
		"num_attention_heads": c.NumAttentionHeads, "intermediate_size": c.IntermediateSize,
		"vocab_size": c.VocabSize, "head_dim": c.HeadDim,
	} {
		if v <= 0 {
			return nil, fmt.Errorf("config.json: %s must be positive, got %d", name, v)
		}
	}
	if c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return nil, fmt.Errorf("config.json: num_attention_heads %d is not a multiple of num_key_value_heads %d",
			c.NumAttentionHeads, c.NumKeyValueHeads)
	}
	return c, nil
}

// LoadConfig reads <dir>/config.json.
func LoadConfig(dir string) (*Config, error) {
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("model config: %w", err)
	}
	return ParseConfig(data)
}

// ClassifierConfigJSON returns the config.json of the saved reward model: the base's
// keys, with the sequence-classification architecture, one label and pad_token_id set,
// because transformers needs pad_token_id to find the last token when batching.
func (c *Config) ClassifierConfigJSON() ([]byte, error) {
	out := make(map[string]any, len(c.Raw)+4)
	maps.Copy(out, c.Raw)
	out["architectures"] = []string{familyPrefix[c.Family] + "ForSequenceClassification"}
	out["num_labels"] = 1
	out["id2label"] = map[string]string{"0": "LABEL_0"}
	out["label2id"] = map[string]int{"LABEL_0": 0}
	out["torch_dtype"] = "float32"
	if c.PadTokenID >= 0 {
		out["pad_token_id"] = c.PadTokenID
	}
	delete(out, "problem_type")
	return json.MarshalIndent(out, "", "  ")
}

// TinySpec describes a randomly initialised base (`critic model init`, tests, benchmarks).
type TinySpec struct {
	Family                                       Family
	Hidden, Layers, Heads, KVHeads, HeadDim, MLP int
	Vocab                                        int
	PadTokenID                                   int // -1: none
	RopeTheta                                    float64
}

// NewBaseConfig returns the config.json of a causal-LM base with these dimensions, in
// the key layout transformers writes for the family.
func NewBaseConfig(s TinySpec) (*Config, error) {
	raw := map[string]any{
		"architectures":           []any{familyPrefix[s.Family] + "ForCausalLM"},
		"model_type":              strings.ToLower(familyPrefix[s.Family]),
		"hidden_size":             s.Hidden,
		"num_hidden_layers":       s.Layers,
		"num_attention_heads":     s.Heads,
		"num_key_value_heads":     s.KVHeads,
		"head_dim":                s.HeadDim,
		"intermediate_size":       s.MLP,
		"vocab_size":              s.Vocab,
		"rms_norm_eps":            1e-6,
		"rope_theta":              cmp.Or(s.RopeTheta, 1000000),
		"hidden_act":              "silu",
		"tie_word_embeddings":     true,
		"initializer_range":       0.02,
		"max_position_embeddings": 40960,
		"attention_bias":          false,
		"attention_dropout":       0.0,
		"rope_scaling":            nil,
		"use_cache":               true,
		"torch_dtype":             "float32",
	}
	if s.Family == FamilyQwen2 {
		delete(raw, "head_dim") // Qwen2 derives head_dim = hidden/heads
		raw["use_sliding_window"] = false
	}
	if s.PadTokenID >= 0 {
		raw["pad_token_id"] = s.PadTokenID
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	return ParseConfig(data)
}

// ParseFamily maps "qwen3"/"qwen2"/"llama" to a Family.
func ParseFamily(s string) (Family, error) {
	for _, f := range []Family{FamilyQwen3, FamilyQwen2, FamilyLlama} {
		if f.String() == s {
			return f, nil
		}
	}
	return 0, fmt.Errorf("unsupported architecture %q (want qwen3, qwen2 or llama)", s)
}
