package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/gpuworker/model"
)

// scoring runs one scoring run: score every action of the trace with the
// model's checkpoint (kept loaded between jobs); the result is the action
// scores with their credit, a failure its error.
var scoring = register(Kind[jobs.ScoreJob, jobs.ScoringClaim, jobs.ScoringFinished]{
	Kind: jobs.KindScore, What: "scoring job", IDKey: "run_id", HandBack: true,
	Claimed: func(c jobs.ScoringClaim) []any { return []any{"items_key", c.ItemsKey} },
	Fail:    failWithError[jobs.ScoringClaim]("scoring failed"),
	Work: func(ctx context.Context, j *Job[jobs.ScoringClaim]) (jobs.ScoringFinished, error) {
		start := time.Now()
		res, err := j.w.score(ctx, j.Log, j.Args.ItemsKey)
		if err != nil {
			return jobs.ScoringFinished{}, err
		}
		j.w.cfg.Observer.Scored(len(res.ActionScores)+1, time.Since(start))
		j.Log.Info("scored", "actions", len(res.ActionScores))
		return res, nil
	},
})

// score scores one run's items: every action, and the whole trace (its
// trace score), with the checkpoint the items name (kept loaded, so a
// batch of one model loads it once).
func (w *Worker) score(ctx context.Context, log *slog.Logger, itemsKey string) (jobs.ScoringFinished, error) {
	var items jobs.ScoringItems
	if err := w.readJSON(ctx, "scoring items", itemsKey, &items); err != nil {
		return jobs.ScoringFinished{}, err
	}
	if items.ArtifactKey == "" {
		return jobs.ScoringFinished{}, fmt.Errorf("the scoring items %s name no artifact_key", itemsKey)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rm, err := w.rewardModel(ctx, log, items.ArtifactKey)
	if err != nil {
		return jobs.ScoringFinished{}, err
	}
	if rm.ActionStats == nil {
		return jobs.ScoringFinished{}, errors.New("the model has no action_reward_stats.json: it was not trained on action comparisons; " +
			"train a new model with ratings on assistant responses or tool calls")
	}
	texts := make([]string, 0, len(items.ActionScoreItems)+1)
	for _, it := range items.ActionScoreItems {
		texts = append(texts, it.Text)
	}
	texts = append(texts, items.Trace.Text)
	rm.MaxLen = model.DefaultMaxLen
	if items.MaxLength > 0 {
		rm.MaxLen = items.MaxLength
	}
	rs, err := rm.Score(texts)
	if err != nil {
		return jobs.ScoringFinished{}, err
	}
	out := make([]jobs.ActionScore, len(items.ActionScoreItems))
	for i, it := range items.ActionScoreItems {
		if math.IsNaN(rs[i]) || math.IsInf(rs[i], 0) {
			return jobs.ScoringFinished{}, fmt.Errorf("step %s: the model produced a non-finite score", it.StepID)
		}
		out[i] = jobs.ActionScore{TraceID: it.TraceID, StepID: it.StepID, Score: rs[i], Credit: rm.ActionStats.Credit(rs[i])}
	}
	res := jobs.ScoringFinished{ActionScores: out}
	if ts := rs[len(rs)-1]; !math.IsNaN(ts) && !math.IsInf(ts, 0) {
		res.TraceScore = &ts
	}
	return res, ctx.Err()
}

// rewardModel returns the loaded checkpoint of key, keeping the last one loaded.
// Callers hold w.mu.
func (w *Worker) rewardModel(ctx context.Context, log *slog.Logger, key string) (*model.RewardModel, error) {
	if w.loaded != nil && w.loaded.key == key {
		return w.loaded.rm, nil
	}
	dir, err := w.Checkpoint(ctx, log, key)
	if err != nil {
		return nil, err
	}
	rm, err := LoadScoringModel(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the checkpoint %s: %w", key, err)
	}
	if w.loaded != nil {
		w.loaded.rm.Model.Finalize()
	}
	w.loaded = &loadedModel{key: key, rm: rm}
	return rm, nil
}

// smallScoringHidden is the hidden size under which the worker scores on
// the pure-Go backend with its ops one at a time (each matmul still spread
// over the cores) instead of the default op-parallel execution. A small
// model's ops take microseconds, so op-parallel scoring is a stream of
// cross-thread hand-offs, and on a machine whose cores the API, PostgreSQL
// or anything else also want (a worker beside the server, `critic run`),
// each hand-off can wait a scheduler slice: a 128×2 Qwen3 scoring 300
// three-text traces on 2 busy cores (load ~10) ran 5.1–9.0 traces/s
// op-parallel and 31–36/s with ops in sequence, at the same CPU time
// (bench-score's background part, docs/development.md). Large models keep
// the default, which measured faster for them (Qwen3-0.6B's shape, 8×1024
// tokens: 10.3–12.1 s against 13.7–15.8 s; model.defaultGoOptions).
const smallScoringHidden = 512

// smallScoringBackend is the engine options for models under
// smallScoringHidden (a GOMLX_BACKEND value).
const smallScoringBackend = "go:ops_sequential,parallelism=-1"

// ScoringBackend is the GOMLX_BACKEND value the worker scores cfg's model
// on: the operator's GOMLX_BACKEND when set, else smallScoringBackend for a
// small model and the default ("") for the rest.
func ScoringBackend(cfg model.Config) string {
	if spec := os.Getenv(model.BackendEnv); spec != "" {
		return spec
	}
	if cfg.HiddenSize < smallScoringHidden {
		return smallScoringBackend
	}
	return ""
}

// LoadScoringModel loads the checkpoint in dir as the worker scores with
// it (ScoringBackend). Every job that scores with a reward model — scoring,
// the evaluator's benchmark margins, GEPA's scorer — loads it here, so a
// small model runs with its ops in sequence wherever the worker shares
// cores; bench-score's raw reference loads it the same way.
func LoadScoringModel(dir string) (*model.RewardModel, error) {
	cfg, err := model.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	return model.LoadRewardModelOn(dir, ScoringBackend(*cfg))
}

// Checkpoint returns the extracted checkpoint directory of the archive at key,
// downloading and extracting it once into DataDir/worker/checkpoints/<hash>/.
// Artifacts of succeeded models never change, so the cache is not revalidated.
func (w *Worker) Checkpoint(ctx context.Context, log *slog.Logger, key string) (string, error) {
	root := filepath.Join(w.cfg.DataDir, "worker", "checkpoints")
	sum := sha256.Sum256([]byte(key))
	final := filepath.Join(root, hex.EncodeToString(sum[:16]))
	modelDir := filepath.Join(final, ArchiveRoot)
	if _, err := os.Stat(filepath.Join(modelDir, "config.json")); err == nil {
		return modelDir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, ".download-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	extracted := filepath.Join(tmp, "x")
	if _, err := w.downloadCheckpoint(ctx, log, key, filepath.Join(tmp, "archive.tar.gz"), extracted); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(extracted, "artifact_key"), []byte(key+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(extracted, final); err != nil {
		// Another process sharing DataDir may have finished first.
		if _, serr := os.Stat(filepath.Join(modelDir, "config.json")); serr != nil {
			os.RemoveAll(final) // an incomplete leftover; the next job retries
			return "", fmt.Errorf("caching the checkpoint %s: %w", key, err)
		}
	}
	return modelDir, nil
}

// downloadCheckpoint downloads the checkpoint archive at key to the file
// archive and extracts it into dst, returning its model directory.
func (w *Worker) downloadCheckpoint(ctx context.Context, log *slog.Logger, key, archive, dst string) (string, error) {
	log.Info("downloading checkpoint", "artifact_key", key)
	if err := w.cfg.Blobs.GetToFile(ctx, key, archive); err != nil {
		return "", fmt.Errorf("downloading the checkpoint %s: %w", key, err)
	}
	return ExtractArchive(archive, dst)
}
