package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/train"
	"github.com/criticml/critic/platform/requestid"
)

// training trains one attempt of a reward model: read the dataset, train
// on the base model, write the checkpoint archive and the score files to
// the blob store; the result is training_succeeded with the metrics and
// stats. A failure reports what happened (first line) and the job's log;
// a stopping worker hands the attempt back with the phase it reached.
var training = Kind[jobs.TrainJob, jobs.TrainingClaim, jobs.Succeeded]{
	Kind: jobs.KindTrain, What: "training job", IDKey: "model_id", HandBack: true, BeatOnProgress: true,
	Claimed: func(c jobs.TrainingClaim) []any {
		return []any{"attempt", c.Attempt, "base_model", c.BaseModel, "epochs", c.Epochs, "dataset_key", c.DatasetKey, "lease_seconds", c.LeaseSeconds}
	},
	Lease: func(c jobs.TrainingClaim) int { return c.LeaseSeconds },
	Fail: func(j *Job[jobs.TrainingClaim], err error) (string, any) {
		// The job's log is the model's error, which its owner reads: the
		// full error (with the worker's paths) goes to the worker's own log
		// only.
		public := j.w.pathFree(err)
		if public != err.Error() {
			j.w.log.Error("training failed", "model_id", j.ID, "attempt", j.Args.Attempt, "error", err)
		}
		j.Log.Error("training failed", "error", public)
		return FailureReport("training failed: "+public, j.Tail()), nil
	},
	HandBackReason: func(j *Job[jobs.TrainingClaim]) string {
		return fmt.Sprintf("worker %s stopped (shutting down) during %s", j.w.client.WorkerID, phase(j.beats.progress()))
	},
	Work: func(ctx context.Context, j *Job[jobs.TrainingClaim]) (jobs.Succeeded, error) {
		return j.w.train(ctx, j)
	},
}

// phase is the last phase a training job reported ("training" before
// any), for messages.
func phase(p any) string {
	pr, _ := p.(events.Progress)
	switch {
	case pr.Phase == "":
		return "training"
	case pr.TotalSteps > 0:
		return fmt.Sprintf("%s (step %d/%d)", pr.Phase, pr.Step, pr.TotalSteps)
	}
	return pr.Phase
}

// WakeTraining handles a critic.jobs.train message: it is only a wake-up
// (a model became claimable). The attempt itself is pulled by the
// training loop of whichever worker is free, so the message is
// acknowledged at once and never ties a model to a busy worker.
func (w *Worker) WakeTraining(_ context.Context, _ []byte) bool {
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

// trainLoop pulls training attempts one at a time while ctx lives: it asks
// the API for the oldest queued one whenever it is free (woken by a train
// message, or every ClaimPollInterval) and runs it. While the API cannot be
// reached it takes nothing, and says so once (and once when it is back).
func (w *Worker) trainLoop(ctx context.Context) {
	failures := 0
	pres := &presence{hub: w.hub, device: deviceKind(os.Getenv(model.BackendEnv))}
	go pres.run(ctx)
	for ctx.Err() == nil {
		// Like any claim, bounded but not cut by a shutdown: an attempt the
		// API gave this worker is handed back below rather than left to
		// its lease.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimWait)
		claim, err := w.client.claimNextTraining(cctx, w.cfg.Compute, pres.fill)
		cancel()
		switch {
		case ctx.Err() != nil && claim != nil:
			w.RunTraining(ctx, claim)
			return
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			if failures == 1 {
				w.log.Warn("cannot claim training from the API; taking no training job until it answers", "api", w.client.Current(), "error", err)
			}
			// Two failed calls in a row that never reached the API: leave
			// the job topics so other workers take those jobs.
			if failures >= 2 && unreachable(err) && w.api.set(true) {
				w.log.Warn("the API cannot be reached: leaving the job topics until it answers, so other workers take their jobs",
					"api", w.client.BaseURL, "error", err)
			}
			sleep(ctx, backoff(failures, 5*time.Second))
			continue
		}
		if w.api.set(false) {
			w.log.Info("the API answers again: rejoining the job topics", "api", w.client.Current())
		}
		if failures > 0 {
			w.log.Info("the API answers again; claiming training", "api", w.client.Current())
			failures = 0
		}
		if claim != nil {
			w.RunTraining(ctx, claim)
			continue
		}
		t := time.NewTimer(w.cfg.ClaimPollInterval)
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// RunTraining runs an attempt the training loop claimed; it returns false
// only when ctx ended mid-job (the attempt was handed back).
func (w *Worker) RunTraining(ctx context.Context, claim *jobs.TrainingClaim) bool {
	if claim.CorrelationID != "" {
		ctx = requestid.With(ctx, claim.CorrelationID)
	}
	msg, _ := json.Marshal(jobs.TrainJob{ModelID: claim.ModelID, Attempt: claim.Attempt, OwnerID: claim.OwnerID})
	return training.run(ctx, w, claim.ModelID, msg, claim)
}

// pathFree is err as a tenant may read it: the paths its file-system errors
// name (mkdir, rename, open under the data dir, the hub cache) and the
// data dir itself are replaced by "<worker path>", so a model's error never
// tells its owner how the worker's disk is laid out.
func (w *Worker) pathFree(err error) string {
	var paths []string
	var walk func(error)
	walk = func(e error) {
		switch x := e.(type) {
		case *fs.PathError:
			paths = append(paths, x.Path)
		case *os.LinkError:
			paths = append(paths, x.Old, x.New)
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			if next := u.Unwrap(); next != nil {
				walk(next)
			}
		case interface{ Unwrap() []error }:
			for _, next := range u.Unwrap() {
				walk(next)
			}
		}
	}
	walk(err)
	if abs, aerr := filepath.Abs(w.cfg.DataDir); aerr == nil {
		paths = append(paths, abs)
	}
	paths = append(paths, w.cfg.DataDir)
	// Longest first, so a path is not half-replaced through its parent.
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	s := err.Error()
	for _, p := range paths {
		if p != "" && p != "." && p != "/" {
			s = strings.ReplaceAll(s, p, "<worker path>")
		}
	}
	return s
}

// JobDir is where a training attempt works: DataDir/worker/jobs/<model>/attempt-<n>.
func (w *Worker) JobDir(modelID string, attempt int) string {
	return filepath.Join(w.cfg.DataDir, "worker", "jobs", modelID, fmt.Sprintf("attempt-%d", attempt))
}

// DatasetOptions maps a stored dataset onto the trainer's inputs.
func DatasetOptions(ds rewardmodels.Dataset) train.Options {
	o := train.Options{Pairs: make([]train.Pair, len(ds.Pairs)),
		ScoreItems:       make([]train.ScoreItem, len(ds.ScoreItems)),
		ActionScoreItems: make([]train.ActionScoreItem, len(ds.ActionScoreItems))}
	for i, p := range ds.Pairs {
		o.Pairs[i] = train.Pair{Chosen: p.Chosen, Rejected: p.Rejected, TraceIDs: p.TraceIDs, Granularity: p.Granularity,
			ActionType: domain.OrEmpty(p.ActionType)}
	}
	for i, it := range ds.ScoreItems {
		o.ScoreItems[i] = train.ScoreItem{TraceID: it.TraceID, Text: it.Text}
	}
	for i, it := range ds.ActionScoreItems {
		o.ActionScoreItems[i] = train.ActionScoreItem{TraceID: it.TraceID, StepID: it.StepID, Text: it.Text}
	}
	return o
}

// train runs a claimed attempt up to (not including) the success report.
func (w *Worker) train(ctx context.Context, j *Job[jobs.TrainingClaim]) (jobs.Succeeded, error) {
	log, claim, m := j.Log, j.Args, j.Args
	start := time.Now()
	dir := w.JobDir(m.ModelID, m.Attempt)
	if err := os.RemoveAll(dir); err != nil {
		return jobs.Succeeded{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return jobs.Succeeded{}, err
	}
	if !w.cfg.KeepJobDirs {
		defer func() {
			os.RemoveAll(dir)
			os.Remove(filepath.Dir(dir)) // the model's folder, when no other attempt is in it
		}()
	}
	j.Progress(events.Progress{Phase: "training"})

	var ds rewardmodels.Dataset
	err := w.readJSON(ctx, "dataset", claim.DatasetKey, &ds)
	if err != nil {
		return jobs.Succeeded{}, err
	}
	if ds.ModelID != "" && ds.ModelID != m.ModelID {
		return jobs.Succeeded{}, fmt.Errorf("the dataset %s belongs to model %s, not %s", claim.DatasetKey, ds.ModelID, m.ModelID)
	}
	o := DatasetOptions(ds)
	o.OutDir, o.Epochs = dir, claim.Epochs
	if ds.MaxLength > 0 {
		o.MaxLen = ds.MaxLength // input version 3's window
	}
	log.Info("dataset loaded", "pairs", len(o.Pairs), "score_items", len(o.ScoreItems), "action_score_items", len(o.ActionScoreItems))
	if len(o.Pairs) < 2 { // before fetching the base model (spec 002)
		return jobs.Succeeded{}, fmt.Errorf("%w, got %d", train.ErrTooFewPairs, len(o.Pairs))
	}
	log.Info("resolving base model", "base_model", claim.BaseModel)
	if o.BaseDir, err = w.hub.Resolve(ctx, claim.BaseModel, "main"); err != nil {
		return jobs.Succeeded{}, fmt.Errorf("base model %s: %w", claim.BaseModel, err)
	}
	o.Progress = func(step, total int, loss, tps float64) {
		log.Info(fmt.Sprintf("step %d/%d loss %.4f tokens/s %.0f", step, total, loss, tps))
		w.cfg.Observer.TrainStep(tps)
		j.Progress(events.Progress{Phase: "training", Step: step, TotalSteps: total, Loss: loss, TokensPerSec: tps})
		if step == total {
			log.Info("evaluating and scoring", "score_items", len(o.ScoreItems), "action_score_items", len(o.ActionScoreItems))
			j.Progress(events.Progress{Phase: "scoring", Step: step, TotalSteps: total, Loss: loss})
		}
	}
	if w.cfg.TrainOptions != nil {
		w.cfg.TrainOptions(&o)
	}
	res, err := train.Train(ctx, o)
	if err != nil {
		return jobs.Succeeded{}, err
	}
	met := res.Metrics
	log.Info("trained", "train_pairs", met.TrainPairs, "eval_pairs", met.EvalPairs, "final_loss", met.FinalLoss,
		"device", met.Device, "seconds", fmt.Sprintf("%.1f", met.Seconds))
	if err := ctx.Err(); err != nil {
		return jobs.Succeeded{}, err
	}

	j.Progress(events.Progress{Phase: "uploading"})
	archive := filepath.Join(dir, ArchiveRoot+".tar.gz")
	if err := WriteArchive(res.ModelDir, archive); err != nil {
		return jobs.Succeeded{}, err
	}
	if st, err := os.Stat(archive); err == nil {
		log.Info("uploading checkpoint", "artifact_key", claim.ArtifactKey, "bytes", st.Size())
	}
	if err := w.cfg.Blobs.PutFile(ctx, claim.ArtifactKey, archive); err != nil {
		return jobs.Succeeded{}, fmt.Errorf("uploading the checkpoint to %s: %w", claim.ArtifactKey, err)
	}
	s := jobs.Succeeded{ScoresKey: jobs.ScoresKey(claim.OwnerID, m.ModelID, m.Attempt)}
	if err := w.cfg.Blobs.PutFile(ctx, s.ScoresKey, filepath.Join(dir, "scores.jsonl")); err != nil {
		return jobs.Succeeded{}, fmt.Errorf("uploading scores: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "action_scores.jsonl")); err == nil {
		s.ActionScoresKey = jobs.ActionScoresKey(claim.OwnerID, m.ModelID, m.Attempt)
		if err := w.cfg.Blobs.PutFile(ctx, s.ActionScoresKey, filepath.Join(dir, "action_scores.jsonl")); err != nil {
			return jobs.Succeeded{}, fmt.Errorf("uploading action scores: %w", err)
		}
	}
	if s.RewardStats, err = os.ReadFile(filepath.Join(res.ModelDir, "reward_stats.json")); err != nil {
		return jobs.Succeeded{}, err
	}
	if data, err := os.ReadFile(filepath.Join(res.ModelDir, "action_reward_stats.json")); err == nil {
		s.ActionRewardStats = data
	} else if !os.IsNotExist(err) {
		return jobs.Succeeded{}, err
	}
	met.Seconds = time.Since(start).Seconds() // spec 002: including scoring and upload
	if s.Metrics, err = json.Marshal(met); err != nil {
		return jobs.Succeeded{}, fmt.Errorf("encoding the metrics: %w", err)
	}
	return s, ctx.Err()
}
