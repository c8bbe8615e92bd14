package model_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/tokenizer/tokenizertest"
)

// With Qwen3's real tokenizer: pad resolves to <|endoftext|> (151643) as transformers
// sets it, the vocabulary fits Qwen3-0.6B's embedding (151936) but not a smaller one,
// and EncodeForReward keeps exactly the last maxLen ids with nothing appended.
func TestQwen3TokenizerContract(t *testing.T) {
	dir := tokenizertest.Qwen3Dir(t)
	tok, err := model.LoadTokenizer(dir)
	require.NoError(t, err)
	cfg, err := model.NewBaseConfig(model.TinySpec{Family: model.FamilyQwen3, Hidden: 16, Layers: 1, Heads: 2,
		KVHeads: 1, HeadDim: 8, MLP: 16, Vocab: 151936, PadTokenID: -1})
	require.NoError(t, err)
	require.NoError(t, model.CheckTokenizer(cfg, tok))
	require.NoError(t, model.ResolvePadID(cfg, tok))
	require.Equal(t, 151643, cfg.PadTokenID)
	cfg.VocabSize = 1000
	require.ErrorContains(t, model.CheckTokenizer(cfg, tok), "tokenizer mismatch")

	text := strings.Repeat("The agent looked up order 1182 and refunded it. ", 200) + "<|im_end|>"
	full := tok.Encode(text)
	require.Greater(t, len(full), 1024)
	ids := model.EncodeForReward(tok, text, 1024)
	require.Len(t, ids, 1024)
	require.Equal(t, full[len(full)-1024:], ids)
	require.Equal(t, 151645, ids[len(ids)-1], "<|im_end|> in the text stays the last id; no EOS is appended")
}
