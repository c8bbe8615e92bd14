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

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/gpuworker/gepa"
	"github.com/criticml/critic/platform/llm"
)

// gepaRuns runs one critic.jobs.gepa job: download the checkpoint into a
// fresh temporary directory, run the optimizer with every evaluated
// candidate reported as it happens, and report result.json or the end of
// the job's log.
var gepaRuns = register(Kind[jobs.GepaJob, jobs.GepaClaim, json.RawMessage]{
	Kind: jobs.KindGepa, What: "GEPA run", IDKey: "run_id", HandBack: true,
	Claimed: func(c jobs.GepaClaim) []any {
		return []any{"task_model", c.Job.TaskModel, "reflection_model", c.Job.ReflectionModel, "max_metric_calls", c.Job.MaxMetricCalls}
	},
	Lease: func(c jobs.GepaClaim) int { return c.LeaseSeconds },
	Fail:  failWithTail[jobs.GepaClaim]("GEPA run failed"),
	Work: func(ctx context.Context, j *Job[jobs.GepaClaim]) (json.RawMessage, error) {
		res, err := j.w.gepa(ctx, j)
		if err != nil {
			return nil, err
		}
		j.Log.Info("GEPA run done", "best_score", res.BestScore, "seed_score", res.SeedScore, "metric_calls", res.MetricCalls)
		return json.Marshal(res)
	},
})

// gepa runs a claimed run up to (not including) its report.
func (w *Worker) gepa(ctx context.Context, j *Job[jobs.GepaClaim]) (*gepa.Result, error) {
	log, runID := j.Log, j.ID
	var mu sync.Mutex
	progress := events.GepaProgress{MaxMetricCalls: j.Args.Job.MaxMetricCalls}
	j.Progress(progress)
	job := j.Args.Job
	raw, err := w.cfg.Blobs.Get(ctx, job.ExamplesKey)
	if err != nil {
		return nil, fmt.Errorf("reading the examples %s: %w", job.ExamplesKey, err)
	}
	exs, err := decodeExamples(raw)
	if err != nil {
		return nil, fmt.Errorf("decoding the examples %s: %w", job.ExamplesKey, err)
	}
	// A nil Getenv is os.Getenv there.
	task, err := gepa.ResolveTenantModel(w.cfg.Getenv, "task", job.TaskModel, domain.OrEmpty(job.TaskAPIBase), job.TaskAPIKey)
	if err != nil {
		return nil, err
	}
	refl, err := gepa.ResolveModel(w.cfg.Getenv, "reflection", job.ReflectionModel, "")
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
	dir, err := w.downloadCheckpoint(ctx, log, job.RewardModelKey, filepath.Join(tmp, "model.tar.gz"), filepath.Join(tmp, "x"))
	if err != nil {
		return nil, err
	}
	rm, err := LoadScoringModel(dir)
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
	cfg := gepa.Config{Examples: exs, Task: llm.New(task, llm.Options{Role: "gepa_task", Observer: w.cfg.LLMObserver}),
		Reflection: llm.New(refl, llm.Options{Role: "gepa_reflection", Observer: w.cfg.LLMObserver}), Scorer: sc,
		MaxMetricCalls: job.MaxMetricCalls, InputVersion: job.InputVersion, Log: logw,
		Progress: func(p gepa.Progress) {
			best := p.BestScore
			mu.Lock()
			progress = events.GepaProgress{Iteration: p.Iteration, MetricCalls: p.MetricCalls, MaxMetricCalls: p.MaxMetricCalls, BestScore: &best}
			mu.Unlock()
			j.Progress(progress)
		},
		OnCandidate: func(c gepa.CandidateReport) {
			mu.Lock()
			prog := progress
			mu.Unlock()
			prog.Iteration, prog.MetricCalls = c.Iteration, c.MetricCalls
			ev := events.GepaRunCandidateEvaluatedV1{RunID: runID, Iteration: c.Iteration, Parent: c.Parent, Index: c.Index, Skill: c.Skill,
				Accepted: c.Accepted, MinibatchScore: c.MinibatchScore, ParentMinibatchScore: c.ParentMinibatchScore, Score: c.Score, Progress: prog}
			if err := j.Report(ctx, ev, nil); err != nil {
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
	for line := range bytes.SplitSeq(bytes.TrimRight(p, "\n"), []byte("\n")) {
		l.log.Info(string(line))
	}
	return len(p), nil
}
