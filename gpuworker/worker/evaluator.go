package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/train"
	"github.com/criticml/critic/platform/requestid"
)

// TopicEvaluatorTrain carries shared-evaluator candidate jobs (domain/jobs).
const TopicEvaluatorTrain = jobs.TopicEvaluatorTrain

// ClaimCandidate claims a queued shared-evaluator candidate; 409 when it is
// not queued.
func (c *Client) ClaimCandidate(ctx context.Context, id string) (*jobs.EvaluatorCandidateClaim, error) {
	var out jobs.EvaluatorCandidateClaim
	if err := c.post(ctx, jobs.EvaluatorCandidatePath(url.PathEscape(id), "claim"), jobs.EvaluatorCandidateRequest{WorkerID: c.WorkerID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CandidateSucceeded reports a trained candidate and its benchmark margins.
func (c *Client) CandidateSucceeded(ctx context.Context, id string, s jobs.EvaluatorCandidateSucceeded) error {
	s.WorkerID = c.WorkerID
	return c.post(ctx, jobs.EvaluatorCandidatePath(url.PathEscape(id), "succeeded"), s, nil)
}

// CandidateHandBack returns a running candidate to the queue (this worker
// is stopping); reason is one line.
func (c *Client) CandidateHandBack(ctx context.Context, id, reason string) error {
	return c.post(ctx, jobs.EvaluatorCandidatePath(url.PathEscape(id), "handback"),
		jobs.EvaluatorCandidateHandBack{EvaluatorCandidateRequest: jobs.EvaluatorCandidateRequest{WorkerID: c.WorkerID}, Reason: reason}, nil)
}

// CandidateHeartbeat renews the lease on a running candidate; 409 means it
// is lost (stop, report nothing).
func (c *Client) CandidateHeartbeat(ctx context.Context, id string) error {
	return c.post(ctx, jobs.EvaluatorCandidatePath(url.PathEscape(id), "heartbeat"), jobs.EvaluatorCandidateRequest{WorkerID: c.WorkerID}, nil)
}

// CandidateFailed reports a failed candidate; msg is the end of its log.
func (c *Client) CandidateFailed(ctx context.Context, id, msg string) error {
	return c.post(ctx, jobs.EvaluatorCandidatePath(url.PathEscape(id), "failed"),
		jobs.EvaluatorCandidateFailed{EvaluatorCandidateRequest: jobs.EvaluatorCandidateRequest{WorkerID: c.WorkerID}, Error: msg}, nil)
}

// HandleEvaluatorTrain runs one critic.jobs.evaluator_train message: claim
// the candidate, train it on its dataset exactly as a personal model
// trains (spec 002 "Training settings"), score every benchmark item's two
// sides with it and with the incumbent release, upload the checkpoint and
// report the margins the release gates read. It returns false only when
// ctx ended mid-job (the message stays unacknowledged).
func (w *Worker) HandleEvaluatorTrain(ctx context.Context, payload []byte) bool {
	var m jobs.EvaluatorTrainJob
	if err := json.Unmarshal(payload, &m); err != nil || !safeID(m.CandidateID) {
		w.log.Error("dropping malformed evaluator training message", "payload", truncate(string(payload), 300), "error", err)
		return true
	}
	log, tail := jobLogger(w.log, withRequestID(ctx, "job", "evaluator_train", "candidate_id", m.CandidateID)...)
	ctx, endJob := w.cfg.Observer.JobStarted(ctx, "evaluator_train", requestid.From(ctx))
	outcome, jobErr := "failed", error(nil)
	defer func() { endJob(outcome, jobErr) }()
	claim, err := retry(ctx, 0, log, "claiming the evaluator candidate", func(ctx context.Context) (*jobs.EvaluatorCandidateClaim, error) {
		return w.client.ClaimCandidate(ctx, m.CandidateID)
	})
	if stop, ack := settleClaim(ctx, err, log, "evaluator candidate", slog.LevelInfo, &outcome, &jobErr); stop {
		return ack
	}
	log.Info("claimed evaluator candidate", "base_model", claim.BaseModel, "epochs", claim.Epochs, "incumbent", claim.IncumbentArtifactKey,
		"lease_seconds", claim.LeaseSeconds)
	// The lease is renewed while the candidate trains, scores and reports;
	// a refused heartbeat (the lease expired and the candidate went to
	// another worker, or an operator cancelled it) stops the job.
	jobCtx, cancelJob := context.WithCancelCause(ctx)
	defer cancelJob(nil)
	stopBeats := beatCandidate(jobCtx, w.client, m.CandidateID, claim.LeaseSeconds, log, func() { cancelJob(errLeaseLost) })
	defer stopBeats()
	report, err := w.trainCandidate(jobCtx, log, claim)
	if errors.Is(context.Cause(jobCtx), errLeaseLost) {
		outcome, jobErr = "lease_lost", errLeaseLost
		log.Warn("lease lost: stopping the evaluator candidate without reporting")
		return true
	}
	if err == nil {
		_, err = retry(ctx, w.cfg.ReportRetryFor, log, "reporting the candidate", func(ctx context.Context) (struct{}, error) {
			return struct{}{}, w.client.CandidateSucceeded(ctx, m.CandidateID, *report)
		})
		if err == nil {
			outcome = "succeeded"
			log.Info("evaluator candidate trained", "artifact_key", claim.ArtifactKey, "benchmark_items", len(report.CandidateMargins))
			return true
		}
		if errors.Is(err, ErrNotClaimable) {
			outcome, jobErr = "lease_lost", err
			log.Warn("the API refused the candidate report", "error", err)
			return true
		}
		log.Error("the API rejected the candidate report", "error", err)
	}
	jobErr = err
	if ctx.Err() != nil {
		// Stopping: hand it back; the next free worker trains it.
		outcome = "interrupted"
		w.handBack(ctx, log, "evaluator candidate", "its lease will expire and requeue it", func(ctx context.Context, reason string) error {
			return w.client.CandidateHandBack(ctx, m.CandidateID, reason)
		})
		return false
	}
	log.Error("evaluator candidate failed", "error", err)
	if _, rerr := retry(ctx, w.cfg.ReportRetryFor, log, "reporting the candidate failure", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.client.CandidateFailed(ctx, m.CandidateID, tail.String())
	}); rerr != nil {
		log.Error("could not report the candidate failure", "error", rerr)
	}
	return ctx.Err() == nil
}

// trainCandidate trains and scores a claimed candidate up to the report.
func (w *Worker) trainCandidate(ctx context.Context, log *slog.Logger, claim *jobs.EvaluatorCandidateClaim) (*jobs.EvaluatorCandidateSucceeded, error) {
	dir := filepath.Join(w.cfg.DataDir, "worker", "jobs", "evaluator-"+claim.CandidateID)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if !w.cfg.KeepJobDirs {
		defer os.RemoveAll(dir)
	}
	raw, err := w.cfg.Blobs.Get(ctx, claim.DatasetKey)
	if err != nil {
		return nil, fmt.Errorf("reading the candidate dataset %s: %w", claim.DatasetKey, err)
	}
	var ds jobs.EvaluatorDataset
	if err := json.Unmarshal(raw, &ds); err != nil {
		return nil, fmt.Errorf("decoding the candidate dataset %s: %w", claim.DatasetKey, err)
	}
	if ds.CandidateID != claim.CandidateID {
		return nil, fmt.Errorf("the dataset %s belongs to candidate %s, not %s", claim.DatasetKey, ds.CandidateID, claim.CandidateID)
	}
	if len(ds.Benchmark) == 0 {
		return nil, errors.New("the candidate dataset has no benchmark items to score")
	}
	o := DatasetOptions(rewardmodels.Dataset{Pairs: ds.Pairs})
	o.OutDir, o.Epochs = dir, claim.Epochs
	log.Info("candidate dataset loaded", "pairs", len(o.Pairs), "benchmark_items", len(ds.Benchmark), "benchmark_version", ds.BenchmarkVersion)
	if len(o.Pairs) < 2 {
		return nil, fmt.Errorf("%w, got %d", train.ErrTooFewPairs, len(o.Pairs))
	}
	if o.BaseDir, err = w.hub.Resolve(ctx, claim.BaseModel, "main"); err != nil {
		return nil, fmt.Errorf("base model %s: %w", claim.BaseModel, err)
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
		return nil, err
	}
	log.Info("candidate trained", "train_pairs", res.Metrics.TrainPairs, "eval_pairs", res.Metrics.EvalPairs, "final_loss", res.Metrics.FinalLoss)
	out := &jobs.EvaluatorCandidateSucceeded{}
	if out.ActionRewardStats, err = os.ReadFile(filepath.Join(res.ModelDir, "action_reward_stats.json")); err != nil {
		return nil, fmt.Errorf("the candidate has no action_reward_stats.json (it learned no action comparisons): %w", err)
	}
	if out.Metrics, err = json.Marshal(res.Metrics); err != nil {
		return nil, err
	}
	if out.CandidateMargins, err = benchmarkMargins(res.ModelDir, ds.Benchmark); err != nil {
		return nil, fmt.Errorf("scoring the benchmark with the candidate: %w", err)
	}
	if claim.IncumbentArtifactKey != "" {
		incDir, err := w.Checkpoint(ctx, log, claim.IncumbentArtifactKey)
		if err != nil {
			return nil, err
		}
		if out.IncumbentMargins, err = benchmarkMargins(incDir, ds.Benchmark); err != nil {
			return nil, fmt.Errorf("scoring the benchmark with the incumbent %s: %w", claim.IncumbentArtifactKey, err)
		}
	}
	archive := filepath.Join(dir, ArchiveRoot+".tar.gz")
	if err := WriteArchive(res.ModelDir, archive); err != nil {
		return nil, err
	}
	if err := w.cfg.Blobs.PutFile(ctx, claim.ArtifactKey, archive); err != nil {
		return nil, fmt.Errorf("uploading the candidate checkpoint to %s: %w", claim.ArtifactKey, err)
	}
	return out, ctx.Err()
}

// benchmarkMargins loads a checkpoint and returns r(chosen) − r(rejected)
// for every benchmark item, with the training window (1024 tokens, left
// truncation).
func benchmarkMargins(modelDir string, items []jobs.EvaluatorBenchmarkItem) (map[string]float64, error) {
	rm, err := model.LoadRewardModel(modelDir)
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

// TopicEvaluatorScore carries automatic-scoring jobs (domain/jobs).
const TopicEvaluatorScore = jobs.TopicEvaluatorScore

// ClaimEvaluatorScoring claims a trace for the live release; 409 when
// there is none, the trace is gone, or its revision is already scored.
func (c *Client) ClaimEvaluatorScoring(ctx context.Context, traceID string) (*jobs.EvaluatorScoringClaim, error) {
	var out jobs.EvaluatorScoringClaim
	if err := c.post(ctx, jobs.EvaluatorScoringPath(url.PathEscape(traceID), "claim"), jobs.EvaluatorCandidateRequest{WorkerID: c.WorkerID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// EvaluatorScored reports a trace revision's evaluator scores.
func (c *Client) EvaluatorScored(ctx context.Context, traceID string, s jobs.EvaluatorScored) error {
	s.WorkerID = c.WorkerID
	return c.post(ctx, jobs.EvaluatorScoringPath(url.PathEscape(traceID), "scored"), s, nil)
}

// EvaluatorScoringFailed reports a failed scoring job.
func (c *Client) EvaluatorScoringFailed(ctx context.Context, traceID string, f jobs.EvaluatorScoringFailed) error {
	f.WorkerID = c.WorkerID
	return c.post(ctx, jobs.EvaluatorScoringPath(url.PathEscape(traceID), "failed"), f, nil)
}

// HandleEvaluatorScore runs one critic.jobs.evaluator_score message: claim
// the trace, score each action input with the live release's checkpoint
// (kept loaded between jobs), and report the scores with their credit, or
// the failure. It returns false only when ctx ended mid-job.
func (w *Worker) HandleEvaluatorScore(ctx context.Context, payload []byte) bool {
	var m jobs.EvaluatorScoreJob
	if err := json.Unmarshal(payload, &m); err != nil || !safeID(m.TraceID) {
		w.log.Error("dropping malformed evaluator scoring message", "payload", truncate(string(payload), 300), "error", err)
		return true
	}
	log, _ := jobLogger(w.log, withRequestID(ctx, "job", "evaluator_score", "trace_id", m.TraceID)...)
	ctx, endJob := w.cfg.Observer.JobStarted(ctx, "evaluator_score", requestid.From(ctx))
	outcome, jobErr := "failed", error(nil)
	defer func() { endJob(outcome, jobErr) }()
	claim, err := retry(ctx, 0, log, "claiming evaluator scoring", func(ctx context.Context) (*jobs.EvaluatorScoringClaim, error) {
		return w.client.ClaimEvaluatorScoring(ctx, m.TraceID)
	})
	if stop, ack := settleClaim(ctx, err, log, "evaluator scoring", slog.LevelDebug, &outcome, &jobErr); stop {
		return ack
	}
	req := jobs.EvaluatorScoringRequest{TraceRevision: claim.TraceRevision, Release: claim.Release}
	start := time.Now()
	scores, err := w.scoreEvaluator(ctx, log, claim)
	if err == nil {
		err = retryReport(ctx, w, log, func(ctx context.Context) error {
			return w.client.EvaluatorScored(ctx, m.TraceID, jobs.EvaluatorScored{EvaluatorScoringRequest: req, Scores: scores})
		})
		if err == nil {
			outcome = "succeeded"
			w.cfg.Observer.Scored(len(scores), time.Since(start))
			log.Info("scored by the shared evaluator", "release", claim.Release, "revision", claim.TraceRevision, "actions", len(scores))
			return true
		}
	}
	jobErr = err
	if ctx.Err() != nil {
		outcome = "interrupted"
		return false // unacknowledged: redelivered, and the claim decides again
	}
	if errors.Is(err, ErrNotClaimable) {
		outcome = "refused"
		log.Info("evaluator scores not recorded: the trace or the release changed meanwhile", "detail", err.Error())
		return true
	}
	log.Error("evaluator scoring failed", "error", err)
	if rerr := retryReport(ctx, w, log, func(ctx context.Context) error {
		return w.client.EvaluatorScoringFailed(ctx, m.TraceID, jobs.EvaluatorScoringFailed{EvaluatorScoringRequest: req, Error: truncate(err.Error(), ErrorTailChars)})
	}); rerr != nil {
		log.Error("could not report the evaluator scoring failure", "error", rerr)
	}
	return true
}

func retryReport(ctx context.Context, w *Worker, log *slog.Logger, fn func(context.Context) error) error {
	_, err := retry(ctx, w.cfg.ReportRetryFor, log, "reporting evaluator scores", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx)
	})
	return err
}

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

// beatCandidate renews a candidate's lease every third of it until stop is
// called; a 409 calls lost. Other errors are retried at the next beat: a
// short API outage costs nothing while it is shorter than the lease.
func beatCandidate(ctx context.Context, c *Client, id string, leaseSeconds int, log *slog.Logger, lost func()) (stop func()) {
	if leaseSeconds <= 0 {
		leaseSeconds = 60
	}
	period := max(time.Duration(leaseSeconds)*time.Second/3, time.Second)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := c.CandidateHeartbeat(ctx, id); errors.Is(err, ErrNotClaimable) {
				lost()
				return
			} else if err != nil && ctx.Err() == nil {
				log.Warn("evaluator candidate heartbeat failed; retrying at the next beat", "error", err)
			}
		}
	}()
	return func() { cancel(); <-done }
}
