package train

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const tinyTok = "../testdata/tinytok"

func writeLines(t *testing.T, path string, vs ...any) {
	var b bytes.Buffer
	for _, v := range vs {
		data, err := json.Marshal(v)
		require.NoError(t, err)
		b.Write(append(data, '\n'))
	}
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
}

// init → train → score through the CLI with a real (tiny) tokenizer.json.
func TestCLIInitTrainScore(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	base := filepath.Join(tmp, "base")
	var out, errb bytes.Buffer
	require.NoError(t, CLI(ctx, []string{"init", "--arch", "qwen3", "--hidden", "32", "--layers", "1", "--heads", "4",
		"--kv-heads", "2", "--head-dim", "8", "--intermediate", "64", "--tokenizer", tinyTok, "--out", base}, nil, &out, &errb))
	require.Contains(t, out.String(), "Qwen3ForCausalLM")
	cfg, err := os.ReadFile(filepath.Join(base, "config.json"))
	require.NoError(t, err)
	require.Contains(t, string(cfg), `"vocab_size": 261`)
	require.FileExists(t, filepath.Join(base, "chat_template.jinja"))

	pairs := filepath.Join(tmp, "pairs.jsonl")
	writeLines(t, pairs,
		map[string]any{"chosen": "the answer is right", "rejected": "the answer is wrong", "trace_id": "t1", "granularity": "trace"},
		map[string]any{"chosen": "the refund went through", "rejected": "no", "trace_id": "t2", "granularity": "trace"},
		map[string]any{"chosen": "lookup(1)", "rejected": "drop(1)", "trace_ids": []string{"t3"}, "granularity": "step", "action_type": "tool_call"})
	items := filepath.Join(tmp, "items.jsonl")
	writeLines(t, items, map[string]any{"trace_id": "t1", "text": "the answer is right"})
	job := filepath.Join(tmp, "job")
	out.Reset()
	errb.Reset()
	require.NoError(t, CLI(ctx, []string{"train", "--pairs", pairs, "--base", base, "--out", job, "--epochs", "2",
		"--score-items", items}, nil, &out, &errb))
	require.Contains(t, errb.String(), "step 1/")
	require.Contains(t, errb.String(), "tokens/s")
	require.Contains(t, out.String(), `"train_pairs"`)
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
		"chat_template.jinja", "reward_stats.json"} {
		require.FileExists(t, filepath.Join(job, "model", f))
	}

	// score: JSON strings and {"text"} objects, raw and calibrated.
	stdin := `"the answer is right"` + "\n" + `{"text": "the answer is right"}` + "\n"
	out.Reset()
	require.NoError(t, CLI(ctx, []string{"score", "--model", filepath.Join(job, "model")}, strings.NewReader(stdin), &out, &errb))
	lines := strings.Fields(out.String())
	require.Len(t, lines, 2)
	require.Equal(t, lines[0], lines[1])
	sc, err := ReadJSONL[struct{ Score float64 }](filepath.Join(job, "scores.jsonl"))
	require.NoError(t, err)
	raw, err := strconv.ParseFloat(lines[0], 64)
	require.NoError(t, err)
	require.InDelta(t, sc[0].Score, raw, 1e-6, "CLI scoring matches training-time scoring")
	out.Reset()
	require.NoError(t, CLI(ctx, []string{"score", "--model", filepath.Join(job, "model"), "--calibrated"},
		strings.NewReader(stdin), &out, &errb))
	cal, err := strconv.ParseFloat(strings.Fields(out.String())[0], 64)
	require.NoError(t, err)
	require.True(t, cal > 0 && cal < 1)
}

func TestCLIErrors(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	var out, errb bytes.Buffer
	err := CLI(ctx, []string{"train", "--pairs", filepath.Join(tmp, "missing.jsonl"), "--base", tmp, "--out", tmp}, nil, &out, &errb)
	require.ErrorContains(t, err, "missing.jsonl")

	pairs := filepath.Join(tmp, "pairs.jsonl")
	writeLines(t, pairs, map[string]any{"chosen": "a", "rejected": "b"})
	err = CLI(ctx, []string{"train", "--pairs", pairs, "--base", "./no-such-base", "--out", tmp}, nil, &out, &errb)
	require.ErrorIs(t, err, ErrTooFewPairs)

	bad := filepath.Join(tmp, "bad")
	require.NoError(t, os.MkdirAll(bad, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bad, "config.json"), []byte(`{"architectures":["MambaForCausalLM"]}`), 0o644))
	writeLines(t, pairs, map[string]any{"chosen": "a", "rejected": "b"}, map[string]any{"chosen": "c", "rejected": "d"})
	err = CLI(ctx, []string{"train", "--pairs", pairs, "--base", bad, "--out", tmp}, nil, &out, &errb)
	require.ErrorContains(t, err, `unsupported architecture "MambaForCausalLM"`)

	// Tokenizer bigger than the model's vocabulary.
	base := filepath.Join(tmp, "base")
	require.NoError(t, CLI(ctx, []string{"init", "--hidden", "16", "--layers", "1", "--heads", "2", "--kv-heads", "1",
		"--head-dim", "8", "--intermediate", "16", "--tokenizer", tinyTok, "--out", base}, nil, &out, &errb))
	cfgPath := filepath.Join(base, "config.json")
	data, _ := os.ReadFile(cfgPath)
	require.NoError(t, os.WriteFile(cfgPath, bytes.Replace(data, []byte(`"vocab_size": 261`), []byte(`"vocab_size": 200`), 1), 0o644))
	err = CLI(ctx, []string{"train", "--pairs", pairs, "--base", base, "--out", tmp}, nil, &out, &errb)
	require.ErrorContains(t, err, "tokenizer mismatch")
	err = CLI(ctx, []string{"score", "--model", filepath.Join(tmp, "nothing")}, strings.NewReader(""), &out, &errb)
	require.ErrorContains(t, err, "config.json")
}
