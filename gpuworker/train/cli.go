package train

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/criticml/critic/gpuworker/hub"
	"github.com/criticml/critic/gpuworker/model"
)

// CLI implements `critic model init|train|score` (cmd/critic/model.go dispatches here
// so the commands are testable without the binary).
func CLI(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: critic model init|train|score|tokenize ...")
	}
	model.SetEngineGC()
	switch args[0] {
	case "init":
		return cliInit(args[1:], stdout, stderr)
	case "train":
		return cliTrain(ctx, args[1:], stdout, stderr)
	case "score":
		return cliScore(args[1:], stdin, stdout, stderr)
	}
	return fmt.Errorf("unknown model subcommand %q (want init, train, score or tokenize)", args[0])
}

func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: "+usage)
		fs.PrintDefaults()
	}
	return fs
}

func cliInit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("model init", "critic model init --arch qwen3 --hidden 64 --layers 2 --heads 4 --kv-heads 2 "+
		"--head-dim 16 --intermediate 128 --tokenizer DIR --out DIR [--seed 0]", stderr)
	arch := fs.String("arch", "qwen3", "qwen3, qwen2 or llama")
	hidden := fs.Int("hidden", 64, "hidden size")
	layers := fs.Int("layers", 2, "decoder layers")
	heads := fs.Int("heads", 4, "query heads")
	kvHeads := fs.Int("kv-heads", 2, "key/value heads")
	headDim := fs.Int("head-dim", 16, "head dimension")
	inter := fs.Int("intermediate", 128, "MLP size")
	tokDir := fs.String("tokenizer", "", "directory with tokenizer.json (vocabulary size comes from it)")
	out := fs.String("out", "", "output directory")
	seed := fs.Uint64("seed", 0, "initialisation seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tokDir == "" || *out == "" {
		return errors.New("model init: --tokenizer and --out are required")
	}
	fam, err := model.ParseFamily(*arch)
	if err != nil {
		return err
	}
	tok, err := model.LoadTokenizer(*tokDir)
	if err != nil {
		return err
	}
	pad := -1
	if id, ok := tok.PadTokenID(); ok {
		pad = id
	} else if id, ok := tok.EOSTokenID(); ok {
		pad = id
	}
	hd := *headDim
	if fam == model.FamilyQwen2 {
		hd = *hidden / *heads
	}
	cfg, err := model.NewBaseConfig(model.TinySpec{Family: fam, Hidden: *hidden, Layers: *layers, Heads: *heads,
		KVHeads: *kvHeads, HeadDim: hd, MLP: *inter, Vocab: tok.VocabSize(), PadTokenID: pad})
	if err != nil {
		return err
	}
	backend, err := model.NewBackend()
	if err != nil {
		return err
	}
	m, err := model.NewRandom(backend, cfg, *seed)
	if err != nil {
		return err
	}
	defer m.Finalize()
	if err := m.SaveBase(*out); err != nil {
		return err
	}
	if err := model.CopyTokenizerFiles(*tokDir, *out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s base (%d parameters, vocab %d) to %s\n", cfg.Architecture, countParams(m), cfg.VocabSize, *out)
	return nil
}

func countParams(m *model.Model) int {
	n := 0
	for _, s := range m.Specs {
		if s.Name != model.ScoreWeight {
			n += s.Size()
		}
	}
	return n
}

func cliTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("model train", "critic model train --pairs F --base DIR|HF_ID --out DIR [--epochs N] "+
		"[--score-items F] [--action-score-items F]", stderr)
	pairs := fs.String("pairs", "", "pairs.jsonl")
	base := fs.String("base", "", "base model: a local HF directory or a hub id (downloaded and cached)")
	rev := fs.String("revision", "main", "hub revision when --base is a hub id")
	out := fs.String("out", "", "job output directory (result.json, scores, model/)")
	epochs := fs.Int("epochs", 1, "passes over the training pairs")
	scoreItems := fs.String("score-items", "", "score_items.jsonl")
	actionItems := fs.String("action-score-items", "", "action_score_items.jsonl")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *pairs == "" || *base == "" || *out == "" {
		return errors.New("model train: --pairs, --base and --out are required")
	}
	o := Options{PairsPath: *pairs, OutDir: *out, Epochs: *epochs}
	var err error
	// Read everything and check the pair count before touching the base model.
	if o.Pairs, err = ReadJSONL[Pair](*pairs); err != nil {
		return fmt.Errorf("reading pairs: %w", err)
	}
	if len(o.Pairs) < 2 {
		return fmt.Errorf("%w, got %d", ErrTooFewPairs, len(o.Pairs))
	}
	if *scoreItems != "" {
		if o.ScoreItems, err = ReadJSONL[ScoreItem](*scoreItems); err != nil {
			return fmt.Errorf("reading score items: %w", err)
		}
	}
	if *actionItems != "" {
		if o.ActionScoreItems, err = ReadJSONL[ActionScoreItem](*actionItems); err != nil {
			return fmt.Errorf("reading action score items: %w", err)
		}
	}
	if o.BaseDir, err = hub.NewFromEnv().Resolve(ctx, *base, *rev); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	o.Progress = func(step, total int, loss, tps float64) {
		fmt.Fprintf(stderr, "step %d/%d loss %.4f tokens/s %.0f\n", step, total, loss, tps)
	}
	res, err := Train(ctx, o)
	if err != nil {
		return err
	}
	data, _ := json.Marshal(res)
	fmt.Fprintf(stdout, "%s\n", data)
	fmt.Fprintf(stderr, "checkpoint: %s\n", filepath.Join(*out, "model"))
	return nil
}

func cliScore(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("model score", "critic model score --model DIR [--calibrated] < texts.jsonl", stderr)
	dir := fs.String("model", "", "reward-model checkpoint directory")
	calibrated := fs.Bool("calibrated", false, "print sigmoid((r − mean)/std) from reward_stats.json instead of raw rewards")
	batch := fs.Int("batch", 8, "full-length (1024-token) sequences per forward pass; shorter texts batch proportionally more")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("model score: --model is required")
	}
	rm, err := model.LoadRewardModel(*dir)
	if err != nil {
		return err
	}
	rm.BatchSize = *batch
	if *calibrated && rm.Stats == nil {
		return fmt.Errorf("%s has no reward_stats.json, cannot calibrate", *dir)
	}
	texts, err := readTexts(stdin)
	if err != nil {
		return err
	}
	rs, err := rm.Score(texts)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	for _, r := range rs {
		if *calibrated {
			r = rm.Stats.Calibrated(r)
		}
		fmt.Fprintln(w, strconv.FormatFloat(r, 'g', -1, 64))
	}
	return w.Flush()
}

// readTexts accepts one JSON string or {"text": ...} object per line.
func readTexts(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	var texts []string
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			var obj struct {
				Text *string `json:"text"`
			}
			if err2 := json.Unmarshal(b, &obj); err2 != nil || obj.Text == nil {
				return nil, fmt.Errorf("stdin line %d: want a JSON string or {\"text\": ...}", line)
			}
			s = *obj.Text
		}
		texts = append(texts, s)
	}
	return texts, sc.Err()
}
