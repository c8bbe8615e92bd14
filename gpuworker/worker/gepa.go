package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/gpuworker/gepa"
	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/requestid"
)

// TopicGepa carries GEPA run commands (domain/jobs).
const TopicGepa = jobs.TopicGepa

// HandleGepa runs one critic.jobs.gepa message: claim the run, download the
// checkpoint into a fresh temporary directory, run the optimizer with every
// evaluated candidate reported as it happens, and report the result or the
// end of the job's log. It returns false only when ctx ended mid-job.
func (w *Worker) HandleGepa(ctx context.Context, payload []byte) bool {
	var m jobs.GepaJob
	if err := json.Unmarshal(payload, &m); err != nil || !safeID(m.RunID) {
		w.log.Error("dropping malformed gepa message", "payload", truncate(string(payload), 300), "error", err)
		return true
	}
	log, tail := jobLogger(w.log, withRequestID(ctx, "job", "gepa", "run_id", m.RunID)...)
	ctx, endJob := w.cfg.Observer.JobStarted(ctx, "gepa", requestid.From(ctx))
	outcome, jobErr := "failed", error(nil)
	defer func() { endJob(outcome, jobErr) }()
	claim, err := retry(ctx, 0, log, "claiming the GEPA run", func(ctx context.Context) (*jobs.GepaClaim, error) {
		return w.client.ClaimGepa(ctx, m.RunID)
	})
	if stop, ack := settleClaim(ctx, err, log, "GEPA job", slog.LevelInfo, &outcome, &jobErr); stop {
		return ack
	}
	log.Info("claimed GEPA run", "task_model", claim.Job.TaskModel, "reflection_model", claim.Job.ReflectionModel,
		"max_metric_calls", claim.Job.MaxMetricCalls)

	jobCtx, cancelJob := context.WithCancelCause(ctx)
	defer cancelJob(nil)
	beat := &gepaBeats{p: events.GepaProgress{MaxMetricCalls: claim.Job.MaxMetricCalls}}
	stopBeats := beat.start(jobCtx, w.client, m.RunID, claim.LeaseSeconds, log, func() { cancelJob(errLeaseLost) })
	defer stopBeats()

	res, err := w.gepa(jobCtx, log, m.RunID, claim, beat)
	if err == nil && jobCtx.Err() != nil {
		err = context.Cause(jobCtx)
	}
	if errors.Is(context.Cause(jobCtx), errLeaseLost) {
		outcome = "lease_lost"
		log.Warn("lease lost: stopping the GEPA run without reporting")
		return true
	}
	report := func(what string, fn func(context.Context) error) error {
		_, err := retry(ctx, w.cfg.ReportRetryFor, log, what, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
		return err
	}
	if err == nil {
		raw, _ := json.Marshal(res)
		if err = report("reporting the GEPA result", func(ctx context.Context) error { return w.client.GepaSucceeded(ctx, m.RunID, raw) }); err == nil {
			outcome = "succeeded"
			log.Info("GEPA run succeeded", "best_score", res.BestScore, "seed_score", res.SeedScore, "metric_calls", res.MetricCalls)
			return true
		}
		log.Error("the API rejected the GEPA result", "error", err)
	} else {
		jobErr = err
		if ctx.Err() != nil {
			outcome = "interrupted"
			w.handBack(ctx, log, "GEPA run", "its lease will expire and requeue it", func(ctx context.Context, reason string) error {
				return w.client.GepaHandBack(ctx, m.RunID, reason)
			})
			return false
		}
		log.Error("GEPA run failed", "error", err)
	}
	if err := report("reporting the GEPA failure", func(ctx context.Context) error { return w.client.GepaFailed(ctx, m.RunID, tail.String()) }); err != nil {
		log.Error("could not report the failure; the lease will expire", "error", err)
	}
	return true
}

// gepa runs a claimed run up to (not including) its report.
func (w *Worker) gepa(ctx context.Context, log *slog.Logger, runID string, claim *jobs.GepaClaim, beat *gepaBeats) (*gepa.Result, error) {
	job := claim.Job
	raw, err := w.cfg.Blobs.Get(ctx, job.ExamplesKey)
	if err != nil {
		return nil, fmt.Errorf("reading the examples %s: %w", job.ExamplesKey, err)
	}
	exs, err := decodeExamples(raw)
	if err != nil {
		return nil, fmt.Errorf("decoding the examples %s: %w", job.ExamplesKey, err)
	}
	getenv := w.cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	task, err := gepa.ResolveTenantModel(getenv, "task", job.TaskModel, deref(job.TaskAPIBase), job.TaskAPIKey)
	if err != nil {
		return nil, err
	}
	refl, err := gepa.ResolveModel(getenv, "reflection", job.ReflectionModel, "")
	if err != nil {
		return nil, err
	}
	// A fresh temporary workspace per run (spec 004): the checkpoint never
	// depends on what an earlier job left on this machine.
	root := filepath.Join(w.cfg.DataDir, "worker", "gepa")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(root, runID+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	log.Info("downloading checkpoint", "artifact_key", job.RewardModelKey)
	archive := filepath.Join(tmp, "model.tar.gz")
	if err := w.cfg.Blobs.GetToFile(ctx, job.RewardModelKey, archive); err != nil {
		return nil, fmt.Errorf("downloading the checkpoint %s: %w", job.RewardModelKey, err)
	}
	dir, err := ExtractArchive(archive, filepath.Join(tmp, "x"))
	if err != nil {
		return nil, err
	}
	rm, err := model.LoadRewardModel(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the checkpoint %s: %w", job.RewardModelKey, err)
	}
	defer rm.Model.Finalize()
	if job.InputVersion == 3 {
		rm.MaxLen = 4096
	}
	sc, err := gepa.NewRewardScorer(rm)
	if err != nil {
		return nil, err
	}
	logw := &logWriter{log: log}
	var reportErr error
	var mu sync.Mutex
	cfg := gepa.Config{Examples: exs, Task: llm.New(task, llm.Options{Role: "gepa_task", Observer: w.cfg.LLMObserver}),
		Reflection: llm.New(refl, llm.Options{Role: "gepa_reflection", Observer: w.cfg.LLMObserver}), Scorer: sc,
		MaxMetricCalls: job.MaxMetricCalls, InputVersion: job.InputVersion, Log: logw,
		Progress: func(p gepa.Progress) {
			best := p.BestScore
			beat.set(events.GepaProgress{Iteration: p.Iteration, MetricCalls: p.MetricCalls, MaxMetricCalls: p.MaxMetricCalls, BestScore: &best})
		},
		OnCandidate: func(c gepa.CandidateReport) {
			prog := beat.get()
			prog.Iteration, prog.MetricCalls = c.Iteration, c.MetricCalls
			ev := events.GepaRunCandidateEvaluatedV1{RunID: runID, Iteration: c.Iteration, Parent: c.Parent, Index: c.Index, Skill: c.Skill,
				Accepted: c.Accepted, MinibatchScore: c.MinibatchScore, ParentMinibatchScore: c.ParentMinibatchScore, Score: c.Score, Progress: prog}
			if _, err := retry(ctx, w.cfg.ReportRetryFor, log, "reporting a GEPA candidate", func(ctx context.Context) (struct{}, error) {
				return struct{}{}, w.client.GepaCandidate(ctx, runID, ev)
			}); err != nil {
				mu.Lock()
				reportErr = errors.Join(reportErr, err)
				mu.Unlock()
			}
		}}
	res, err := gepa.Optimize(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if reportErr != nil {
		return nil, fmt.Errorf("reporting candidates: %w", reportErr)
	}
	return res, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func decodeExamples(raw []byte) ([]gepa.Example, error) {
	var out []gepa.Example
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var ex gepa.Example
		if err := dec.Decode(&ex); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		out = append(out, ex)
	}
}

// logWriter turns the optimizer's lines into job-log records (and so into
// the tail a failure reports).
type logWriter struct{ log *slog.Logger }

func (l *logWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		l.log.Info(string(line))
	}
	return len(p), nil
}

// gepaBeats renews a GEPA lease every third of it with the latest progress;
// a 409 calls lost.
type gepaBeats struct {
	mu sync.Mutex
	p  events.GepaProgress
}

func (b *gepaBeats) set(p events.GepaProgress) { b.mu.Lock(); b.p = p; b.mu.Unlock() }
func (b *gepaBeats) get() events.GepaProgress  { b.mu.Lock(); defer b.mu.Unlock(); return b.p }

func (b *gepaBeats) start(ctx context.Context, c *Client, runID string, leaseSeconds int, log *slog.Logger, lost func()) (stop func()) {
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
			if err := c.GepaHeartbeat(ctx, runID, b.get()); errors.Is(err, ErrNotClaimable) {
				lost()
				return
			} else if err != nil && ctx.Err() == nil {
				log.Warn("GEPA heartbeat failed; retrying at the next beat", "error", err)
			}
		}
	}()
	return func() { cancel(); <-done }
}
