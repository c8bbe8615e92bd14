// Package modeltest builds tiny random models and a byte tokenizer for tests, so model
// and training tests run in seconds without downloading anything.
package modeltest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/model"
)

// ByteTokenizer maps each byte b to id 2 + b mod (Vocab−2); 0 is pad, 1 is EOS. It is
// enough to exercise padding, truncation and batching with real text.
type ByteTokenizer struct{ Vocab int }

func (t ByteTokenizer) Encode(text string) []int {
	ids := make([]int, len(text))
	for i := range len(text) {
		ids[i] = 2 + int(text[i])%(t.Vocab-2)
	}
	return ids
}
func (t ByteTokenizer) VocabSize() int          { return t.Vocab }
func (t ByteTokenizer) PadTokenID() (int, bool) { return 0, true }
func (t ByteTokenizer) EOSTokenID() (int, bool) { return 1, true }

// Tiny is the default test shape: Qwen3, 2 layers, GQA 4/2, head_dim 8.
func Tiny() model.TinySpec {
	return model.TinySpec{Family: model.FamilyQwen3, Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2,
		HeadDim: 8, MLP: 64, Vocab: 64, PadTokenID: -1}
}

// WriteBase writes a random causal-LM base with spec into dir and returns its config.
func WriteBase(t testing.TB, dir string, spec model.TinySpec, seed uint64) *model.Config {
	t.Helper()
	backend, err := model.NewBackend()
	require.NoError(t, err)
	cfg, err := model.NewBaseConfig(spec)
	require.NoError(t, err)
	m, err := model.NewRandom(backend, cfg, seed)
	require.NoError(t, err)
	defer m.Finalize()
	require.NoError(t, m.SaveBase(dir))
	return cfg
}
