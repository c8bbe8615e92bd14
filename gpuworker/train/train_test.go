package train

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/model/modeltest"
)

func testPairs() []Pair {
	var ps []Pair
	for i := range 12 {
		tr := fmt.Sprintf("trace-%02d", i)
		ps = append(ps, Pair{Chosen: "user: refund?\nassistant: I refunded order " + tr, Rejected: "user: refund?\nassistant: no",
			TraceIDs: []string{tr}, Granularity: "trace"})
		at := "response"
		if i%2 == 0 {
			at = "tool_call"
		}
		ps = append(ps, Pair{Chosen: "lookup_order(" + tr + ")", Rejected: "delete_order(" + tr + ")",
			TraceID: tr, Granularity: "step", ActionType: at})
	}
	// One comparison spanning the held-out trace and a training trace: excluded.
	held := ps[SplitByTrace(ps, 0).Eval[0]].Traces()[0]
	other := "trace-00"
	if held == other {
		other = "trace-01"
	}
	ps = append(ps, Pair{Chosen: "a", Rejected: "b", TraceIDs: []string{held, other}, Granularity: "trace"})
	return ps
}

func TestSplitByTrace(t *testing.T) {
	ps := testPairs()
	s := SplitByTrace(ps, 0)
	require.True(t, s.Usable)
	// 12 traces → 1 held out (⌊1.2⌋) → its 2 pairs evaluate.
	require.Len(t, s.Eval, 2)
	require.Equal(t, len(ps), len(s.Train)+len(s.Eval)+s.ExcludedCross)
	require.Equal(t, s, SplitByTrace(ps, 0), "seeded")
	held := ps[s.Eval[0]].Traces()[0]
	for _, i := range s.Train {
		require.NotContains(t, ps[i].Traces(), held)
	}

	one := SplitByTrace([]Pair{{TraceID: "x"}, {TraceID: "x"}}, 0)
	require.False(t, one.Usable)
	require.Equal(t, []int{0, 1}, one.Train)
	// Two traces where every pair spans both: no usable split, nothing excluded.
	both := SplitByTrace([]Pair{{TraceIDs: []string{"a", "b"}}, {TraceIDs: []string{"a", "b"}}}, 0)
	require.False(t, both.Usable)
	require.Zero(t, both.ExcludedCross)
}

func TestTooFewPairsFailsBeforeLoadingTheBase(t *testing.T) {
	_, err := Train(context.Background(), Options{Pairs: []Pair{{Chosen: "a", Rejected: "b"}},
		BaseDir: "/nonexistent", OutDir: t.TempDir()})
	require.ErrorIs(t, err, ErrTooFewPairs)
}

func runTrain(t *testing.T, base, out string, epochs int, lr float64, progress func(int, int, float64, float64)) *Result {
	t.Helper()
	res, err := Train(context.Background(), Options{
		Pairs:            testPairs(),
		ScoreItems:       []ScoreItem{{TraceID: "trace-00", Text: "user: refund?\nassistant: done"}, {TraceID: "trace-99", Text: ""}},
		ActionScoreItems: []ActionScoreItem{{TraceID: "trace-00", StepID: "s1", Text: "lookup_order(1)"}},
		BaseDir:          base, OutDir: out, Epochs: epochs, LR: lr, MaxLen: 48,
		Tokenizer: modeltest.ByteTokenizer{Vocab: 64}, Progress: progress,
	})
	require.NoError(t, err)
	return res
}

func fileSHA(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

func TestTrainEndToEnd(t *testing.T) {
	base := t.TempDir()
	modeltest.WriteBase(t, base, modeltest.Tiny(), 1)
	out1, out2 := t.TempDir(), t.TempDir()
	var losses []float64
	var steps []int
	res := runTrain(t, base, out1, 2, 1e-3, func(step, total int, loss, tps float64) {
		steps = append(steps, step)
		losses = append(losses, loss)
		require.Equal(t, 12, total) // ⌈22 train pairs / 4⌉ × 2 epochs
		require.Greater(t, tps, 0.0)
	})
	require.Len(t, steps, 12)
	m := res.Metrics
	require.Equal(t, 22, m.TrainPairs)
	require.Equal(t, 2, m.EvalPairs)
	require.Equal(t, 1, m.ExcludedCrossTracePairs)
	require.NotNil(t, m.EvalAccuracy)
	require.Equal(t, 11, m.ActionTrainPairs)
	require.Equal(t, 1, m.ActionEvalPairs)
	require.NotNil(t, m.ActionEvalAccuracy)
	require.Equal(t, 1, *m.ActionScoringVersion)
	require.Equal(t, 2, m.Epochs)
	require.Equal(t, "cpu", m.Device)
	require.Equal(t, "trace", m.EvalSplit)
	lastEpoch := (losses[6] + losses[7] + losses[8] + losses[9] + losses[10] + losses[11]) / 6
	require.InDelta(t, lastEpoch, m.FinalLoss, 1e-9)
	require.Less(t, m.FinalLoss, (losses[0]+losses[1]+losses[2])/3, "lr 1e-3 must make progress")
	// The training curve: every step's loss as reported, and the held-out
	// accuracy after each epoch, the last equal to the final metric.
	require.Equal(t, losses, m.LossPerStep)
	require.Len(t, m.EvalPerEpoch, 2)
	for i, e := range m.EvalPerEpoch {
		require.Equal(t, i+1, e.Epoch)
		require.Equal(t, 2, e.EvalPairs)
		require.NotNil(t, e.EvalAccuracy)
	}
	require.Equal(t, *m.EvalAccuracy, *m.EvalPerEpoch[1].EvalAccuracy)

	var raw map[string]map[string]any
	data, err := os.ReadFile(filepath.Join(out1, "result.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &raw))
	for _, k := range []string{"train_pairs", "eval_pairs", "eval_accuracy", "eval_split", "excluded_cross_trace_pairs",
		"action_scoring_version", "action_train_pairs", "action_eval_pairs", "action_eval_accuracy", "tool_eval_pairs",
		"tool_eval_accuracy", "final_loss", "epochs", "device", "seconds", "loss_per_step", "eval_per_epoch"} {
		require.Contains(t, raw["metrics"], k)
	}
	require.Len(t, raw["metrics"], 17)

	// Checkpoint: reload and score the same texts → same numbers as scores.jsonl.
	scores, err := ReadJSONL[struct {
		TraceID string  `json:"trace_id"`
		Score   float64 `json:"score"`
	}](filepath.Join(out1, "scores.jsonl"))
	require.NoError(t, err)
	require.Len(t, scores, 2)
	rm, err := model.LoadRewardModelWith(res.ModelDir, modeltest.ByteTokenizer{Vocab: 64})
	require.NoError(t, err)
	rm.MaxLen = 48
	again, err := rm.Score([]string{"user: refund?\nassistant: done", ""})
	require.NoError(t, err)
	require.InDelta(t, scores[0].Score, again[0], 1e-6)
	require.InDelta(t, scores[1].Score, again[1], 1e-6)
	require.NotNil(t, rm.Stats)
	require.Equal(t, 44, rm.Stats.Count)
	require.NotNil(t, rm.ActionStats)
	require.Equal(t, 22, rm.ActionStats.Count)

	acts, err := ReadJSONL[map[string]any](filepath.Join(out1, "action_scores.jsonl"))
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, "s1", acts[0]["step_id"])
	s := acts[0]["score"].(float64)
	require.InDelta(t, rm.ActionStats.Credit(s), acts[0]["credit"].(float64), 1e-12)

	// Determinism: same seed and data → byte-identical checkpoint.
	runTrain(t, base, out2, 2, 1e-3, nil)
	require.Equal(t, fileSHA(t, filepath.Join(out1, "model", "model.safetensors")),
		fileSHA(t, filepath.Join(out2, "model", "model.safetensors")))
}

func TestTraceOnlyPairsHaveNoActionScoring(t *testing.T) {
	base := t.TempDir()
	modeltest.WriteBase(t, base, modeltest.Tiny(), 1)
	out := t.TempDir()
	var ps []Pair
	for _, p := range testPairs() {
		if p.Granularity == "trace" && len(p.Traces()) == 1 {
			p.TraceIDs = []string{"only"} // one trace → no usable split
			ps = append(ps, p)
		}
	}
	res, err := Train(context.Background(), Options{Pairs: ps, BaseDir: base, OutDir: out,
		Tokenizer: modeltest.ByteTokenizer{Vocab: 64}, ActionScoreItems: []ActionScoreItem{{Text: "x"}}})
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(out, "result.json"))
	require.NoError(t, err)
	for _, k := range []string{`"eval_accuracy": null`, `"action_scoring_version": null`, `"action_eval_accuracy": null`,
		`"tool_eval_accuracy": null`, `"eval_pairs": 0`} {
		require.True(t, strings.Contains(string(data), k), k)
	}
	require.Equal(t, len(ps), res.Metrics.TrainPairs)
	require.Empty(t, res.Metrics.EvalPerEpoch, "no held-out split, no per-epoch accuracy")
	require.True(t, strings.Contains(string(data), `"eval_per_epoch": []`))
	require.NoFileExists(t, filepath.Join(out, "action_scores.jsonl"))
	require.NoFileExists(t, filepath.Join(out, "model", "action_reward_stats.json"))
	require.FileExists(t, filepath.Join(out, "model", "reward_stats.json"))
}
