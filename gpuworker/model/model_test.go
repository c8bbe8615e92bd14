package model_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/model/modeltest"
)

func TestSafetensorsRoundTripAndDTypes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	require.NoError(t, model.WriteSafetensors(path, []model.WriteTensor{
		{Name: "b", Shape: []int{2, 2}, Data: model.F32Bytes([]float32{1, -2, 3.5, 4})},
		{Name: "a", Shape: []int{1}, Data: model.F32Bytes([]float32{7})},
	}))
	ck, err := model.OpenCheckpoint(dir)
	require.NoError(t, err)
	got := make([]float32, 4)
	require.NoError(t, ck.ReadF32("b", got))
	require.Equal(t, []float32{1, -2, 3.5, 4}, got)
	require.Equal(t, []int{2, 2}, ck.Tensors["b"].Shape)

	// BF16 and F16 shards behind an index, as HF writes large models.
	shard := func(name, tensor, dtype string, payload []byte) {
		hdr, _ := json.Marshal(map[string]any{tensor: map[string]any{
			"dtype": dtype, "shape": []int{3}, "data_offsets": []int{0, len(payload)}}})
		var buf []byte
		buf = binary.LittleEndian.AppendUint64(buf, uint64(len(hdr)))
		buf = append(append(buf, hdr...), payload...)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), buf, 0o644))
	}
	sdir := t.TempDir()
	dir = sdir
	bf := []byte{}
	for _, v := range []float32{1.5, -2, 0.15625} {
		bf = binary.LittleEndian.AppendUint16(bf, uint16(math.Float32bits(v)>>16))
	}
	shard("model-00001-of-00002.safetensors", "x", "BF16", bf)
	shard("model-00002-of-00002.safetensors", "y", "F16", []byte{0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00}) // 1, -2, 2^-24
	idx, _ := json.Marshal(map[string]any{"weight_map": map[string]string{
		"x": "model-00001-of-00002.safetensors", "y": "model-00002-of-00002.safetensors"}})
	require.NoError(t, os.WriteFile(filepath.Join(sdir, "model.safetensors.index.json"), idx, 0o644))
	ck, err = model.OpenCheckpoint(sdir)
	require.NoError(t, err)
	x := make([]float32, 3)
	require.NoError(t, ck.ReadF32("x", x))
	require.Equal(t, []float32{1.5, -2, 0.15625}, x)
	require.NoError(t, ck.ReadF32("y", x))
	require.Equal(t, []float32{1, -2, float32(math.Pow(2, -24))}, x)
	require.ErrorContains(t, ck.ReadF32("nope", x), `"nope"`)

	_, err = model.OpenCheckpoint(t.TempDir())
	require.ErrorContains(t, err, "no model.safetensors")
}

func TestConfigFamiliesAndErrors(t *testing.T) {
	_, err := model.ParseConfig([]byte(`{"architectures":["GPT2LMHeadModel"],"hidden_size":8}`))
	require.ErrorContains(t, err, `unsupported architecture "GPT2LMHeadModel"`)
	_, err = model.ParseConfig([]byte(`{"architectures":["LlamaForCausalLM"],"hidden_size":8,"num_hidden_layers":1,
		"num_attention_heads":2,"intermediate_size":8,"vocab_size":8,"rope_scaling":{"rope_type":"llama3","factor":8}}`))
	require.ErrorContains(t, err, "rope_scaling")

	q2, err := model.NewBaseConfig(model.TinySpec{Family: model.FamilyQwen2, Hidden: 32, Layers: 1, Heads: 4,
		KVHeads: 2, MLP: 64, Vocab: 64, PadTokenID: -1})
	require.NoError(t, err)
	require.True(t, q2.AttentionBias)
	require.False(t, q2.QKNorm)
	require.Equal(t, 8, q2.HeadDim)
	q3, err := model.NewBaseConfig(modeltest.Tiny())
	require.NoError(t, err)
	require.True(t, q3.QKNorm)
	require.False(t, q3.AttentionBias)
	require.Equal(t, -1, q3.PadTokenID)
}

func TestEncodeForRewardKeepsTheEnd(t *testing.T) {
	tok := modeltest.ByteTokenizer{Vocab: 64}
	ids := model.EncodeForReward(tok, "abcdef", 4)
	require.Equal(t, tok.Encode("cdef"), ids)
	require.Len(t, model.EncodeForReward(tok, "abc", 1024), 3)
}

func TestMakeBatchPoolsLikeTransformers(t *testing.T) {
	b := model.MakeBatch([][]int{{5, 6, 7}, {5, 0}, {}}, 0)
	require.Equal(t, []int{3, 16}, b.IDs.Shape().Dimensions)
	pool := b.Pool.Value().([][]float32)
	require.Equal(t, float32(1), pool[0][2])
	require.Equal(t, float32(1), pool[1][0], "a text ending in the pad id pools its last non-pad token, as HF does")
	require.Equal(t, float32(1), pool[2][0])
	mask := b.KeyMask.Value().([][]float32)
	require.Equal(t, []float32{1, 1, 0}, mask[1][:3])
	require.Equal(t, 3+2+1, b.Tokens)
}

// A base without a score head gets a seeded one; saving the classifier and loading it
// back gives bit-identical rewards, and batching/padding does not change a reward.
func TestLoadSaveReloadScore(t *testing.T) {
	base := t.TempDir()
	modeltest.WriteBase(t, base, modeltest.Tiny(), 1)
	backend, err := model.NewBackend()
	require.NoError(t, err)

	m, err := model.Load(backend, base, 0)
	require.NoError(t, err)
	m2, err := model.Load(backend, base, 0)
	require.NoError(t, err)
	m3, err := model.Load(backend, base, 7)
	require.NoError(t, err)
	s0 := m.Param(model.ScoreWeight).Value().([][]float32)[0]
	require.Equal(t, s0, m2.Param(model.ScoreWeight).Value().([][]float32)[0])
	require.NotEqual(t, s0, m3.Param(model.ScoreWeight).Value().([][]float32)[0])
	var ss float64
	for _, v := range s0 {
		ss += float64(v) * float64(v)
	}
	require.InDelta(t, 0.02, math.Sqrt(ss/float64(len(s0))), 0.01, "normal(0, initializer_range)")

	tok := modeltest.ByteTokenizer{Vocab: 64}
	require.NoError(t, model.ResolvePadID(m.Config, tok))
	require.Equal(t, 0, m.Config.PadTokenID)
	sc, err := m.NewScorer()
	require.NoError(t, err)
	texts := []string{"the agent refunded the order", "no", "a much longer reply that needs more padding than the others"}
	seqs := make([][]int, len(texts))
	for i, s := range texts {
		seqs[i] = model.EncodeForReward(tok, s, 1024)
	}
	batched, err := sc.Rewards(seqs)
	require.NoError(t, err)
	for i := range seqs {
		one, err := sc.Rewards(seqs[i : i+1])
		require.NoError(t, err)
		require.InDelta(t, batched[i], one[0], 1e-5, "padding must not change reward %d", i)
	}
	require.NotEqual(t, batched[0], batched[1])

	out := t.TempDir()
	require.NoError(t, m.SaveClassifier(out))
	require.NoError(t, model.WriteStats(filepath.Join(out, "reward_stats.json"), rewardmodels.RewardStats{Mean: 0.5, Std: 2, Count: 4}))
	var cfgJSON map[string]any
	data, err := os.ReadFile(filepath.Join(out, "config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &cfgJSON))
	require.Equal(t, []any{"Qwen3ForSequenceClassification"}, cfgJSON["architectures"])
	require.Equal(t, float64(1), cfgJSON["num_labels"])
	require.Equal(t, float64(0), cfgJSON["pad_token_id"])
	require.Equal(t, map[string]any{"0": "LABEL_0"}, cfgJSON["id2label"])
	ck, err := model.OpenCheckpoint(out)
	require.NoError(t, err)
	require.Contains(t, ck.Tensors, "model.layers.1.self_attn.q_norm.weight")
	require.Contains(t, ck.Tensors, "score.weight")
	require.NotContains(t, ck.Tensors, "lm_head.weight")
	require.Equal(t, "F32", ck.Tensors["score.weight"].DType)

	rm, err := model.LoadRewardModelWith(out, tok)
	require.NoError(t, err)
	again, err := rm.Score(texts)
	require.NoError(t, err)
	for i := range texts {
		require.InDelta(t, batched[i], again[i], 1e-6)
	}
	c, err := rm.Calibrated(0.5)
	require.NoError(t, err)
	require.InDelta(t, 0.5, c, 1e-12)
	c, _ = rm.Calibrated(2.5)
	require.InDelta(t, 1/(1+math.Exp(-1)), c, 1e-12)

	_, err = model.LoadRewardModelWith(out, modeltest.ByteTokenizer{Vocab: 65})
	require.ErrorContains(t, err, "tokenizer mismatch")
}
