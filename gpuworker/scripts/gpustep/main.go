// Command gpustep times one training step of a Qwen3-0.6B-shaped reward model (random
// weights) in our engine: batch 4 pairs × 1024 tokens, Bradley–Terry loss, AdamW — the
// real train.Train path, on whatever GOMLX_BACKEND selects (gpu_check.sh sets
// xla:<CUDA PJRT plugin>). It writes a random base to -work (≈2.4 GB), trains until
// -warmup+-steps steps are done, cancels, and prints one JSON line.
//
//	GOMLX_BACKEND=xla:/…/xla_cuda_plugin.so go run ./gpuworker/scripts/gpustep -work /tmp/b
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/train"
)

const (
	vocab = 151936
	pad   = 151643 // Qwen3's <|endoftext|>
)

// hashTok maps each byte to a fixed id below the pad id, so 1024 bytes are 1024 tokens.
type hashTok struct{}

func (hashTok) Encode(s string) []int {
	ids := make([]int, len(s))
	for i := range len(s) {
		ids[i] = int((uint64(s[i])*2654435761 + 7) % pad)
	}
	return ids
}
func (hashTok) VocabSize() int          { return vocab }
func (hashTok) PadTokenID() (int, bool) { return pad, true }
func (hashTok) EOSTokenID() (int, bool) { return pad, true }

func main() {
	work := flag.String("work", "", "scratch directory for the random base (required)")
	warmup := flag.Int("warmup", 2, "untimed steps (the first compiles)")
	steps := flag.Int("steps", 5, "timed steps")
	seqLen := flag.Int("len", 1024, "tokens per sequence")
	tiny := flag.Bool("tiny", false, "a 2-layer, hidden-64 model instead of the 0.6B shape (smoke test)")
	flag.Parse()
	if *work == "" {
		fmt.Fprintln(os.Stderr, "usage: gpustep -work DIR [-warmup 2] [-steps 5] [-len 1024]")
		os.Exit(2)
	}
	spec := model.TinySpec{Family: model.FamilyQwen3, Hidden: 1024, Layers: 28, Heads: 16,
		KVHeads: 8, HeadDim: 128, MLP: 3072, Vocab: vocab, PadTokenID: pad}
	if *tiny {
		spec.Hidden, spec.Layers, spec.Heads, spec.KVHeads, spec.HeadDim, spec.MLP = 64, 2, 4, 2, 16, 128
	}
	if err := run(*work, spec, *warmup, *steps, *seqLen); err != nil {
		fmt.Fprintln(os.Stderr, "gpustep:", err)
		os.Exit(1)
	}
}

func run(work string, spec model.TinySpec, warmup, steps, seqLen int) error {
	const batchPairs = 4
	shape := fmt.Sprintf("qwen3 random, hidden %d, %d layers", spec.Hidden, spec.Layers)
	base := filepath.Join(work, fmt.Sprintf("base-qwen3-h%d-l%d", spec.Hidden, spec.Layers))
	if _, err := os.Stat(filepath.Join(base, "model.safetensors")); err != nil {
		// Written with the pure-Go backend: only the training runs on GOMLX_BACKEND.
		cpu, err := model.NewBackendFrom("go")
		if err != nil {
			return err
		}
		cfg, err := model.NewBaseConfig(spec)
		if err != nil {
			return err
		}
		m, err := model.NewRandom(cpu, cfg, 0)
		if err != nil {
			return err
		}
		err = m.SaveBase(base)
		m.Finalize()
		if err != nil {
			return err
		}
	}

	total := warmup + steps
	rng := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		b := make([]byte, seqLen)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	pairs := make([]train.Pair, batchPairs*total) // no trace ids: everything trains
	for i := range pairs {
		pairs[i] = train.Pair{Chosen: text(), Rejected: text()}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	var stamps []time.Time
	var tokPerSec []float64
	var firstLoss float64
	backend := os.Getenv(model.BackendEnv)
	_, err := train.Train(ctx, train.Options{
		Pairs: pairs, BaseDir: base, OutDir: filepath.Join(work, "job"), BatchPairs: batchPairs, MaxLen: seqLen,
		Tokenizer: hashTok{},
		Progress: func(step, _ int, loss, tps float64) {
			stamps = append(stamps, time.Now())
			tokPerSec = append(tokPerSec, tps)
			if step == 1 {
				firstLoss = loss
			}
			fmt.Fprintf(os.Stderr, "step %d/%d loss %.4f %.0f tokens/s (%.1fs since start)\n",
				step, total, loss, tps, time.Since(start).Seconds())
			if step >= total {
				cancel()
			}
		},
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if len(stamps) < total || steps < 1 {
		return fmt.Errorf("only %d of %d steps ran", len(stamps), total)
	}
	var secs []float64
	for i := warmup; i < total; i++ {
		secs = append(secs, stamps[i].Sub(stamps[i-1]).Seconds())
	}
	slices.Sort(secs)
	med := secs[len(secs)/2]
	if len(secs)%2 == 0 {
		med = (secs[len(secs)/2-1] + secs[len(secs)/2]) / 2
	}
	tokens := float64(2 * batchPairs * seqLen)
	out, _ := json.Marshal(map[string]any{
		"engine": "critic-gomlx", "gomlx_backend": backend, "shape": shape,
		"batch":                     fmt.Sprintf("%d pairs x %d tokens", batchPairs, seqLen),
		"load_compile_first_step_s": stamps[0].Sub(start).Seconds(),
		"step_seconds_median":       med, "step_seconds_all": secs,
		"tokens_per_s": tokens / med, "first_loss": firstLoss,
	})
	fmt.Println(string(out))
	return nil
}
