package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/train"
)

// evaluatorCandidates trains one shared-evaluator candidate: train it on
// its dataset exactly as a personal model trains (spec 002 "Training
// settings"), score every benchmark item's two sides with it and with the
// incumbent release, upload the checkpoint and report the margins the
// release gates read. The lease is renewed while the candidate trains,
// scores and reports; a refused heartbeat (the lease expired and the
// candidate went to another worker, or an operator cancelled it) stops it.
var evaluatorCandidates = register(Kind[jobs.EvaluatorTrainJob, jobs.EvaluatorCandidateClaim, jobs.EvaluatorCandidateSucceeded]{
	Kind: jobs.KindEvaluatorTrain, What: "evaluator candidate", IDKey: "candidate_id", HandBack: true,
	Claimed: func(c jobs.EvaluatorCandidateClaim) []any {
		return []any{"base_model", c.BaseModel, "epochs", c.Epochs, "incumbent", c.IncumbentArtifactKey, "lease_seconds", c.LeaseSeconds}
	},
	Lease: func(c jobs.EvaluatorCandidateClaim) int { return c.LeaseSeconds },
	Fail:  failWithTail[jobs.EvaluatorCandidateClaim]("evaluator candidate failed"),
	Work: func(ctx context.Context, j *Job[jobs.EvaluatorCandidateClaim]) (jobs.EvaluatorCandidateSucceeded, error) {
		return j.w.trainCandidate(ctx, j.Log, &j.Args)
	},
})

// trainCandidate trains and scores a claimed candidate up to the report.
func (w *Worker) trainCandidate(ctx context.Context, log *slog.Logger, claim *jobs.EvaluatorCandidateClaim) (jobs.EvaluatorCandidateSucceeded, error) {
	dir := filepath.Join(w.cfg.DataDir, "worker", "jobs", "evaluator-"+claim.CandidateID)
	if err := os.RemoveAll(dir); err != nil {
		return jobs.EvaluatorCandidateSucceeded{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return jobs.EvaluatorCandidateSucceeded{}, err
	}
	if !w.cfg.KeepJobDirs {
		defer os.RemoveAll(dir)
	}
	var ds jobs.EvaluatorDataset
	err := w.readJSON(ctx, "candidate dataset", claim.DatasetKey, &ds)
	if err != nil {
		return jobs.EvaluatorCandidateSucceeded{}, err
	}
	if ds.CandidateID != claim.CandidateID {
		return jobs.EvaluatorCandidateSucceeded{}, fmt.Errorf("the dataset %s belongs to candidate %s, not %s", claim.DatasetKey, ds.CandidateID, claim.CandidateID)
	}
	if len(ds.Benchmark) == 0 {
		return jobs.EvaluatorCandidateSucceeded{}, errors.New("the candidate dataset has no benchmark items to score")
	}
	o := DatasetOptions(rewardmodels.Dataset{Pairs: ds.Pairs})
	o.OutDir, o.Epochs = dir, claim.Epochs
	log.Info("candidate dataset loaded", "pairs", len(o.Pairs), "benchmark_items", len(ds.Benchmark), "benchmark_version", ds.BenchmarkVersion)
	if len(o.Pairs) < 2 {
		return jobs.EvaluatorCandidateSucceeded{}, fmt.Errorf("%w, got %d", train.ErrTooFewPairs, len(o.Pairs))
	}
	if o.BaseDir, err = w.hub.Resolve(ctx, claim.BaseModel, "main"); err != nil {
		return jobs.EvaluatorCandidateSucceeded{}, fmt.Errorf("base model %s: %w", claim.BaseModel, err)
	}
	o.Progress = func(step, total int, loss, tps float64) {
		log.Info(fmt.Sprintf("step %d/%d loss %.4f tokens/s %.0f", step, total, loss, tps))
		w.cfg.Observer.TrainStep(tps)
	}
	if w.cfg.TrainOptions != nil {
		w.cfg.TrainOptions(&o)
	}
	res, err := train.Train(ctx, o)
	if err != nil {
		return jobs.EvaluatorCandidateSucceeded{}, err
	}
	log.Info("candidate trained", "train_pairs", res.Metrics.TrainPairs, "eval_pairs", res.Metrics.EvalPairs, "final_loss", res.Metrics.FinalLoss)
	var out jobs.EvaluatorCandidateSucceeded
	if out.ActionRewardStats, err = os.ReadFile(filepath.Join(res.ModelDir, "action_reward_stats.json")); err != nil {
		return jobs.EvaluatorCandidateSucceeded{}, fmt.Errorf("the candidate has no action_reward_stats.json (it learned no action comparisons): %w", err)
	}
	if out.Metrics, err = json.Marshal(res.Metrics); err != nil {
		return jobs.EvaluatorCandidateSucceeded{}, err
	}
	if out.CandidateMargins, err = benchmarkMargins(res.ModelDir, ds.Benchmark); err != nil {
		return jobs.EvaluatorCandidateSucceeded{}, fmt.Errorf("scoring the benchmark with the candidate: %w", err)
	}
	if claim.IncumbentArtifactKey != "" {
		incDir, err := w.Checkpoint(ctx, log, claim.IncumbentArtifactKey)
		if err != nil {
			return jobs.EvaluatorCandidateSucceeded{}, err
		}
		if out.IncumbentMargins, err = benchmarkMargins(incDir, ds.Benchmark); err != nil {
			return jobs.EvaluatorCandidateSucceeded{}, fmt.Errorf("scoring the benchmark with the incumbent %s: %w", claim.IncumbentArtifactKey, err)
		}
	}
	archive := filepath.Join(dir, ArchiveRoot+".tar.gz")
	if err := WriteArchive(res.ModelDir, archive); err != nil {
		return jobs.EvaluatorCandidateSucceeded{}, err
	}
	if err := w.cfg.Blobs.PutFile(ctx, claim.ArtifactKey, archive); err != nil {
		return jobs.EvaluatorCandidateSucceeded{}, fmt.Errorf("uploading the candidate checkpoint to %s: %w", claim.ArtifactKey, err)
	}
	return out, ctx.Err()
}

// benchmarkMargins loads a checkpoint and returns r(chosen) − r(rejected)
// for every benchmark item, with the training window (1024 tokens, left
// truncation), on the engine the worker scores it with (LoadScoringModel).
func benchmarkMargins(modelDir string, items []jobs.EvaluatorBenchmarkItem) (map[string]float64, error) {
	rm, err := LoadScoringModel(modelDir)
	if err != nil {
		return nil, fmt.Errorf("loading the checkpoint %s: %w", modelDir, err)
	}
	defer rm.Model.Finalize()
	rm.MaxLen = model.DefaultMaxLen
	texts := make([]string, 0, 2*len(items))
	for _, it := range items {
		texts = append(texts, it.Chosen, it.Rejected)
	}
	rs, err := rm.Score(texts)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(items))
	for i, it := range items {
		d := rs[2*i] - rs[2*i+1]
		if math.IsNaN(d) || math.IsInf(d, 0) {
			return nil, fmt.Errorf("benchmark item %s: the model produced a non-finite score", it.ID)
		}
		out[it.ID] = d
	}
	return out, nil
}

// evaluatorScoring scores one trace's actions with the live release's
// checkpoint (kept loaded between jobs) and reports the scores with their
// credit, or the failure; a trace or release that changed meanwhile ends
// the job without a report (the new one has a job of its own).
var evaluatorScoring = register(Kind[jobs.EvaluatorScoreJob, jobs.EvaluatorScoringClaim, jobs.EvaluatorScored]{
	Consume: short,
	Kind:    jobs.KindEvaluatorScore, What: "evaluator scoring", IDKey: "trace_id",
	Claimed: func(c jobs.EvaluatorScoringClaim) []any {
		return []any{"release", c.Release, "revision", c.TraceRevision, "actions", len(c.Inputs)}
	},
	Fail: func(j *Job[jobs.EvaluatorScoringClaim], err error) (string, any) {
		j.Log.Error("evaluator scoring failed", "error", err)
		return truncate(err.Error(), ErrorTailChars), jobs.EvaluatorScoringRequest{TraceRevision: j.Args.TraceRevision, Release: j.Args.Release}
	},
	Work: func(ctx context.Context, j *Job[jobs.EvaluatorScoringClaim]) (jobs.EvaluatorScored, error) {
		start := time.Now()
		scores, err := j.w.scoreEvaluator(ctx, j.Log, &j.Args)
		if err != nil {
			if ctx.Err() != nil {
				return jobs.EvaluatorScored{}, RetryLater(err)
			}
			return jobs.EvaluatorScored{}, err
		}
		j.w.cfg.Observer.Scored(len(scores), time.Since(start))
		return jobs.EvaluatorScored{EvaluatorScoringRequest: jobs.EvaluatorScoringRequest{TraceRevision: j.Args.TraceRevision, Release: j.Args.Release},
			Scores: scores}, nil
	},
})

func (w *Worker) scoreEvaluator(ctx context.Context, log *slog.Logger, claim *jobs.EvaluatorScoringClaim) ([]jobs.EvaluatorActionScore, error) {
	out := make([]jobs.EvaluatorActionScore, len(claim.Inputs))
	if len(claim.Inputs) == 0 {
		return out, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rm, err := w.rewardModel(ctx, log, claim.ArtifactKey)
	if err != nil {
		return nil, err
	}
	if rm.ActionStats == nil {
		return nil, fmt.Errorf("release %d's checkpoint has no action_reward_stats.json", claim.Release)
	}
	rm.MaxLen = model.DefaultMaxLen
	texts := make([]string, len(claim.Inputs))
	for i, in := range claim.Inputs {
		texts[i] = in.Text
	}
	rs, err := rm.Score(texts)
	if err != nil {
		return nil, err
	}
	for i, in := range claim.Inputs {
		if math.IsNaN(rs[i]) || math.IsInf(rs[i], 0) {
			return nil, fmt.Errorf("step %s: the model produced a non-finite score", in.StepID)
		}
		out[i] = jobs.EvaluatorActionScore{StepID: in.StepID, Score: rs[i], Credit: rm.ActionStats.Credit(rs[i])}
	}
	return out, ctx.Err()
}
