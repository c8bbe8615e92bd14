// Package train fine-tunes a reward model with the Bradley–Terry loss exactly as spec
// 002 "Training settings" fixes it, then scores traces and actions and writes the job
// directory outputs of spec 001 "Job directory contract".
package train

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/model"
)

// Options configures one training job. Zero values take spec 002's settings.
type Options struct {
	PairsPath        string // pairs.jsonl; used when Pairs is nil
	Pairs            []Pair
	ScoreItems       []ScoreItem
	ActionScoreItems []ActionScoreItem
	BaseDir          string // HF model directory (config.json, safetensors, tokenizer.json)
	OutDir           string // job directory: result.json, scores.jsonl, action_scores.jsonl, model/
	Epochs           int    // default 1
	Seed             uint64 // split and batch order; spec fixes 0
	MaxLen           int    // default 1024, left truncation
	BatchPairs       int    // default 4
	LR               float64
	// Tokenizer overrides loading <BaseDir>/tokenizer.json (tests).
	Tokenizer model.Tokenizer
	Progress  func(step, totalSteps int, loss float64, tokensPerSec float64)
}

// Metrics is result.json's "metrics" (spec 001/002); nil pointers encode null.
type Metrics struct {
	TrainPairs              int      `json:"train_pairs"`
	EvalPairs               int      `json:"eval_pairs"`
	EvalAccuracy            *float64 `json:"eval_accuracy"`
	EvalSplit               string   `json:"eval_split"`
	ExcludedCrossTracePairs int      `json:"excluded_cross_trace_pairs"`
	ActionScoringVersion    *int     `json:"action_scoring_version"`
	ActionTrainPairs        int      `json:"action_train_pairs"`
	ActionEvalPairs         int      `json:"action_eval_pairs"`
	ActionEvalAccuracy      *float64 `json:"action_eval_accuracy"`
	ToolEvalPairs           int      `json:"tool_eval_pairs"`
	ToolEvalAccuracy        *float64 `json:"tool_eval_accuracy"`
	FinalLoss               float64  `json:"final_loss"`
	Epochs                  int      `json:"epochs"`
	Device                  string   `json:"device"`
	Seconds                 float64  `json:"seconds"`
	// LossPerStep is the Bradley–Terry loss of every training step in order
	// (step n is LossPerStep[n-1]) and EvalPerEpoch the held-out accuracy
	// after each epoch (empty without a usable split): the training curve
	// the web app draws, kept with the metrics so it survives the run.
	LossPerStep  []float64   `json:"loss_per_step"`
	EvalPerEpoch []EpochEval `json:"eval_per_epoch"`
}

// EpochEval is the held-out accuracy after one epoch.
type EpochEval struct {
	Epoch        int      `json:"epoch"`
	EvalPairs    int      `json:"eval_pairs"`
	EvalAccuracy *float64 `json:"eval_accuracy"`
}

// Result is what Train returns and writes to result.json.
type Result struct {
	Metrics Metrics `json:"metrics"`
	// ModelDir is the saved checkpoint (<OutDir>/model).
	ModelDir string `json:"-"`
}

// ErrTooFewPairs is returned before any model is loaded (spec 002: at least two pairs).
var ErrTooFewPairs = errors.New("training needs at least 2 usable pairs")

// Train runs one training job.
func Train(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	if o.Epochs <= 0 {
		o.Epochs = 1
	}
	if o.MaxLen <= 0 {
		o.MaxLen = model.DefaultMaxLen
	}
	if o.BatchPairs <= 0 {
		o.BatchPairs = 4
	}
	o.LR = cmp.Or(o.LR, 1e-5)
	pairs := o.Pairs
	if pairs == nil && o.PairsPath != "" {
		var err error
		if pairs, err = ReadJSONL[Pair](o.PairsPath); err != nil {
			return nil, fmt.Errorf("reading pairs: %w", err)
		}
	}
	if len(pairs) < 2 {
		return nil, fmt.Errorf("%w, got %d", ErrTooFewPairs, len(pairs))
	}
	split := SplitByTrace(pairs, o.Seed)

	backend, err := model.NewBackend()
	if err != nil {
		return nil, err
	}
	cfg, err := model.LoadConfig(o.BaseDir)
	if err != nil {
		return nil, err
	}
	tok := o.Tokenizer
	if tok == nil {
		if tok, err = model.LoadTokenizer(o.BaseDir); err != nil {
			return nil, err
		}
	}
	if err := model.CheckTokenizer(cfg, tok); err != nil {
		return nil, err
	}
	m, err := model.Load(backend, o.BaseDir, o.Seed)
	if err != nil {
		return nil, err
	}
	defer m.Finalize()
	if err := model.ResolvePadID(m.Config, tok); err != nil {
		return nil, err
	}

	enc := func(s string) []int { return model.EncodeForReward(tok, s, o.MaxLen) }
	chosen := make([][]int, len(pairs))
	rejected := make([][]int, len(pairs))
	for i, p := range pairs {
		chosen[i], rejected[i] = enc(p.Chosen), enc(p.Rejected)
	}

	// The scorer reads the current weights on every call: it evaluates after
	// each epoch, then calibrates and scores with the final weights.
	scorer, err := m.NewScorer()
	if err != nil {
		return nil, err
	}
	score := func(seqs [][]int) ([]float64, error) {
		return model.ScoreBucketed(scorer, seqs, model.DefaultScoreTokens)
	}
	pairScores := func(idx []int) (rc, rr []float64, err error) {
		cs := make([][]int, len(idx))
		rs := make([][]int, len(idx))
		for j, i := range idx {
			cs[j], rs[j] = chosen[i], rejected[i]
		}
		if rc, err = score(cs); err != nil {
			return nil, nil, err
		}
		rr, err = score(rs)
		return rc, rr, err
	}

	tr, err := newTrainer(m, DefaultAdamW(o.LR))
	if err != nil {
		return nil, err
	}
	defer tr.finalize()
	rng := rand.New(rand.NewPCG(o.Seed, 0xba7c))
	order := append([]int(nil), split.Train...)
	batchesPerEpoch := (len(order) + o.BatchPairs - 1) / o.BatchPairs
	total := batchesPerEpoch * o.Epochs
	var lastEpochLoss float64
	stepNum := 0
	losses := make([]float64, 0, total)
	evals := []EpochEval{}
	var evalRC, evalRR []float64 // held-out rewards after the last epoch
	for epoch := range o.Epochs {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		lastEpochLoss = 0
		for b := 0; b < len(order); b += o.BatchPairs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			idx := order[b:min(b+o.BatchPairs, len(order))]
			seqs := make([][]int, 2*len(idx)) // [chosen..., rejected...]
			for j, i := range idx {
				seqs[j], seqs[len(idx)+j] = chosen[i], rejected[i]
			}
			t0 := time.Now()
			loss, tokens, err := tr.step(seqs)
			if err != nil {
				return nil, fmt.Errorf("training step %d: %w", stepNum+1, err)
			}
			stepNum++
			lastEpochLoss += loss
			losses = append(losses, loss)
			if o.Progress != nil {
				o.Progress(stepNum, total, loss, float64(tokens)/time.Since(t0).Seconds())
			}
		}
		lastEpochLoss /= float64(batchesPerEpoch)
		if split.Usable {
			if evalRC, evalRR, err = pairScores(split.Eval); err != nil {
				return nil, fmt.Errorf("evaluating epoch %d: %w", epoch+1, err)
			}
			var acc accuracy
			for j := range split.Eval {
				acc.add(evalRC[j] > evalRR[j])
			}
			evals = append(evals, EpochEval{Epoch: epoch + 1, EvalPairs: acc.n, EvalAccuracy: acc.value()})
		}
	}

	met := Metrics{
		TrainPairs: len(split.Train), EvalSplit: "trace", ExcludedCrossTracePairs: split.ExcludedCross,
		FinalLoss: lastEpochLoss, Epochs: o.Epochs, Device: model.DeviceName(backend),
		LossPerStep: losses, EvalPerEpoch: evals,
	}
	if split.Usable { // the weights are the last epoch's: its held-out rewards
		var all, act, tool accuracy
		for j, i := range split.Eval {
			win := evalRC[j] > evalRR[j]
			all.add(win)
			if pairs[i].IsAction() {
				act.add(win)
			}
			if pairs[i].IsTool() {
				tool.add(win)
			}
		}
		met.EvalPairs, met.EvalAccuracy = all.n, all.value()
		met.ActionEvalPairs, met.ActionEvalAccuracy = act.n, act.value()
		met.ToolEvalPairs, met.ToolEvalAccuracy = tool.n, tool.value()
	}

	// reward_stats.json: both texts of every training pair (held-out pairs never set
	// the display scale); action_reward_stats.json: the same over training action pairs.
	rc, rr, err := pairScores(split.Train)
	if err != nil {
		return nil, err
	}
	var allR, actR []float64
	for j, i := range split.Train {
		allR = append(allR, rc[j], rr[j])
		if pairs[i].IsAction() {
			actR = append(actR, rc[j], rr[j])
			met.ActionTrainPairs++
		}
	}
	stats := model.ComputeStats(allR)
	var actStats *rewardmodels.RewardStats
	if met.ActionTrainPairs > 0 {
		actStats = new(model.ComputeStats(actR))
		met.ActionScoringVersion = new(1)
	}

	modelDir := filepath.Join(o.OutDir, "model")
	if err := os.MkdirAll(modelDir, 0o755); err != nil {
		return nil, err
	}
	if err := m.SaveClassifier(modelDir); err != nil {
		return nil, fmt.Errorf("saving checkpoint: %w", err)
	}
	if err := model.CopyTokenizerFiles(o.BaseDir, modelDir); err != nil && o.Tokenizer == nil {
		return nil, err
	}
	if err := model.WriteStats(filepath.Join(modelDir, "reward_stats.json"), stats); err != nil {
		return nil, err
	}
	if actStats != nil {
		if err := model.WriteStats(filepath.Join(modelDir, "action_reward_stats.json"), *actStats); err != nil {
			return nil, err
		}
	}

	if err := writeScores(o, enc, score, actStats); err != nil {
		return nil, err
	}
	met.Seconds = time.Since(start).Seconds()
	res := &Result{Metrics: met, ModelDir: modelDir}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.OutDir, "result.json"), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	return res, nil
}

// writeScores writes scores.jsonl for every score item and, when the model learned
// action comparisons, action_scores.jsonl with display credit. A model trained only
// on trace-level pairs supplies no action scores (spec 001 "Learned action credit").
func writeScores(o Options, enc func(string) []int, score func([][]int) ([]float64, error), act *rewardmodels.RewardStats) error {
	seqs := make([][]int, len(o.ScoreItems))
	for i, it := range o.ScoreItems {
		seqs[i] = enc(it.Text)
	}
	rs, err := score(seqs)
	if err != nil {
		return err
	}
	lines := make([]any, len(rs))
	for i, it := range o.ScoreItems {
		lines[i] = map[string]any{"trace_id": it.TraceID, "score": rs[i]}
	}
	if err := writeJSONL(filepath.Join(o.OutDir, "scores.jsonl"), lines); err != nil {
		return err
	}
	if act == nil {
		return nil
	}
	seqs = make([][]int, len(o.ActionScoreItems))
	for i, it := range o.ActionScoreItems {
		seqs[i] = enc(it.Text)
	}
	if rs, err = score(seqs); err != nil {
		return err
	}
	lines = make([]any, len(rs))
	for i, it := range o.ActionScoreItems {
		lines[i] = map[string]any{"trace_id": it.TraceID, "step_id": it.StepID, "score": rs[i], "credit": act.Credit(rs[i])}
	}
	return writeJSONL(filepath.Join(o.OutDir, "action_scores.jsonl"), lines)
}

func writeJSONL(path string, lines []any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

type accuracy struct{ n, wins int }

func (a *accuracy) add(win bool) {
	a.n++
	if win {
		a.wins++
	}
}

func (a accuracy) value() *float64 {
	if a.n == 0 {
		return nil
	}
	v := float64(a.wins) / float64(a.n)
	return &v
}

// trainer holds the AdamW state next to the model's weights.
type trainer struct {
	m     *model.Model
	exec  *graph.Exec
	ms    []*tensors.Tensor
	vs    []*tensors.Tensor
	t     int
	nPars int
}

func newTrainer(m *model.Model, opt AdamW) (*trainer, error) {
	n := len(m.Params)
	exec, err := graph.NewExec(m.Backend, stepGraph(m.Config, opt, n))
	if err != nil {
		return nil, err
	}
	exec.SetMaxCache(-1)
	tr := &trainer{m: m, exec: exec, nPars: n}
	for _, s := range m.Specs {
		tr.ms = append(tr.ms, tensors.FromScalarAndDimensions(float32(0), s.Shape...))
		tr.vs = append(tr.vs, tensors.FromScalarAndDimensions(float32(0), s.Shape...))
	}
	return tr, nil
}

// step runs one optimizer step on [chosen..., rejected...] and returns the batch loss.
func (tr *trainer) step(seqs [][]int) (loss float64, tokens int, err error) {
	b := model.MakeBatch(seqs, tr.m.PadID())
	tr.t++
	n := tr.nPars
	args := make([]any, 0, 3*n+4)
	for _, group := range [][]*tensors.Tensor{tr.m.Params, tr.ms, tr.vs} {
		for _, t := range group {
			args = append(args, t)
		}
	}
	args = append(args, float32(tr.t), b.IDs, b.KeyMask, b.Pool)
	out, err := tr.exec.Exec(args...)
	if err != nil {
		return 0, 0, err
	}
	for i := range n {
		tr.m.Params[i].FinalizeAll()
		tr.ms[i].FinalizeAll()
		tr.vs[i].FinalizeAll()
		tr.m.Params[i], tr.ms[i], tr.vs[i] = out[i], out[n+i], out[2*n+i]
	}
	loss = float64(tensors.ToScalar[float32](out[3*n]))
	out[3*n].FinalizeAll()
	out[3*n+1].FinalizeAll()
	b.IDs.FinalizeAll()
	b.KeyMask.FinalizeAll()
	b.Pool.FinalizeAll()
	return loss, b.Tokens, nil
}

func (tr *trainer) finalize() {
	for _, t := range append(tr.ms, tr.vs...) {
		t.FinalizeAll()
	}
}
