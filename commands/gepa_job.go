package commands

import (
	"context"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/jobs/lease"
	"github.com/criticml/critic/domain/rewardmodels"
)

// ClaimGepa starts a queued run for one worker; a duplicate delivery loses
// at the status check or the version check.
type ClaimGepa struct {
	WorkerID string
	RunID    string
	Lease    time.Duration
}

// ClaimGepaHandler runs ClaimGepa.
type ClaimGepaHandler struct{ *Streams }

func (c ClaimGepaHandler) Handle(ctx context.Context, cmd ClaimGepa) (jobs.GepaClaim, error) {
	st, err := c.loadGepa(ctx, cmd.RunID)
	if err != nil {
		return jobs.GepaClaim{}, err
	}
	if st.Status != rewardmodels.RunQueued {
		return jobs.GepaClaim{}, lease.NotClaimable("GEPA run %s is not queued (status %s)", cmd.RunID, st.Status)
	}
	p := events.GepaRunStartedV1{RunID: cmd.RunID, WorkerID: cmd.WorkerID, LeaseSeconds: int(cmd.Lease / time.Second)}
	if _, err := c.appendToGepa(ctx, WorkerActor(cmd.WorkerID), st, events.GepaRunStarted, p); err != nil {
		return jobs.GepaClaim{}, err
	}
	rq := st.Requested
	var key string
	if rq.TaskAPIKeySealed != "" {
		if key, err = c.open(rq.TaskAPIKeySealed); err != nil {
			return jobs.GepaClaim{}, lease.NotClaimable("GEPA run %s: task_api_key: %s", cmd.RunID, err.Error())
		}
	}
	return jobs.GepaClaim{RunID: cmd.RunID, OwnerID: st.OwnerID, LeaseSeconds: p.LeaseSeconds, Job: jobs.GepaJobSpec{Kind: "gepa",
		RewardModelKey: rq.ArtifactKey, TaskModel: rq.TaskModel, TaskAPIBase: rq.TaskAPIBase, TaskAPIKey: key, ReflectionModel: rq.ReflectionModel,
		MaxMetricCalls: rq.MaxMetricCalls, ExamplesKey: rq.ExamplesKey, InputVersion: rq.InputVersion}}, nil
}

// ExpireGepaLease handles a running run whose worker stopped heartbeating
// (the stream decides; the read model only nominates): it goes back to the
// queue for the next free worker, or fails once MaxLostRuns runs were lost.
type ExpireGepaLease struct {
	RunID string
	Now   time.Time
}

// ExpireGepaLeaseHandler runs ExpireGepaLease.
type ExpireGepaLeaseHandler struct{ *Streams }

func (c ExpireGepaLeaseHandler) Handle(ctx context.Context, cmd ExpireGepaLease) (Result, error) {
	return c.onGepa(ctx, cmd.RunID, Actor{}, func(st rewardmodels.GepaState) (string, any, error) {
		out, _ := rewardmodels.DecideGepaLeaseExpiry(st, cmd.RunID, cmd.Now)
		return expiry(events.GepaRunRequeued, out.Requeue, events.GepaRunFailed, out.Fail)
	})
}

func (c *Streams) loadGepa(ctx context.Context, runID string) (rewardmodels.GepaState, error) {
	evs, err := c.loadStream(ctx, events.GepaRunStream(runID))
	if err != nil {
		return rewardmodels.GepaState{}, err
	}
	st, err := events.Fold[rewardmodels.GepaState](evs)
	if err != nil {
		return st, err
	}
	if st.Requested.RunID == "" {
		return st, domain.NotFound("GEPA run", runID)
	}
	return st, nil
}

func (c *Streams) appendToGepa(ctx context.Context, actor Actor, st rewardmodels.GepaState, typ string, payload any) (Result, error) {
	return c.appendEvent(ctx, actor, events.GepaRunStream(st.Requested.RunID), st.OwnerID, st.Version, typ, payload)
}

func unit(x float64) bool { return !math.IsNaN(x) && x >= 0 && x <= 1 }

// GepaResult is result.json as the API checks it before recording it.
type GepaResult struct {
	SkillName        string  `json:"skill_name"`
	SkillDescription string  `json:"skill_description"`
	BestSkill        string  `json:"best_skill"`
	BestScore        float64 `json:"best_score"`
	SeedSkill        string  `json:"seed_skill"`
	SeedScore        float64 `json:"seed_score"`
	Candidates       []struct {
		Skill string  `json:"skill"`
		Score float64 `json:"score"`
	} `json:"candidates"`
	Holdout *struct {
		Examples  int     `json:"examples"`
		SeedScore float64 `json:"seed_score"`
		BestScore float64 `json:"best_score"`
	} `json:"holdout"`
	MetricCalls    int `json:"metric_calls"`
	MaxMetricCalls int `json:"max_metric_calls"`
}

var skillNameRE = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

// CheckGepaResult validates a worker's result.json against the contract
// and the run's budget.
func CheckGepaResult(raw json.RawMessage, budget int) (GepaResult, error) {
	var r GepaResult
	if len(raw) > jobs.MaxGepaResultBytes {
		return r, domain.Invalid("result is larger than %d bytes", jobs.MaxGepaResultBytes)
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, domain.Invalid("result is not the GEPA result.json: %v", err)
	}
	switch {
	case !skillNameRE.MatchString(r.SkillName):
		return r, domain.Invalid("skill_name %q must be 1–64 lowercase letters, digits or hyphens", r.SkillName)
	case utf8.RuneCountInString(r.SkillDescription) < 1 || utf8.RuneCountInString(r.SkillDescription) > 1024:
		return r, domain.Invalid("skill_description must be 1–1024 characters")
	case !strings.HasPrefix(r.BestSkill, "---\nname: "+r.SkillName+"\n") || !strings.HasPrefix(r.SeedSkill, "---\nname: "+r.SkillName+"\n"):
		return r, domain.Invalid("best_skill and seed_skill must be full SKILL.md files with the run's name in their frontmatter")
	case !unit(r.BestScore) || !unit(r.SeedScore):
		return r, domain.Invalid("best_score and seed_score must be between 0 and 1")
	case len(r.Candidates) == 0:
		return r, domain.Invalid("candidates must list at least the seed")
	case r.MetricCalls > budget:
		return r, domain.Invalid("metric_calls %d exceeds max_metric_calls %d", r.MetricCalls, budget)
	}
	for i, cd := range r.Candidates {
		if !unit(cd.Score) || cd.Skill == "" {
			return r, domain.Invalid("candidates[%d] needs a skill and a score between 0 and 1", i)
		}
	}
	if h := r.Holdout; h != nil && (h.Examples < 1 || !unit(h.SeedScore) || !unit(h.BestScore)) {
		return r, domain.Invalid("holdout needs examples ≥ 1 and scores between 0 and 1")
	}
	return r, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for i := 0; i < len(s) && i < 4 && !utf8.RuneStart(s[0]); i++ {
		s = s[1:]
	}
	return s
}

var _ = onKind(jobs.KindGepa, (*Streams).gepaJob)

// gepaJob is KindGepa: a GEPA run under a lease renewed with its progress;
// every evaluated candidate is a report (gepa_run.candidate_evaluated) and
// the result is result.json.
func (c *Streams) gepaJob() jobActions {
	type call[B any] = jobCall[jobs.GepaJob, B]
	return jobActions{
		jobs.Claim: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return ClaimGepaHandler{c}.Handle(ctx, ClaimGepa{WorkerID: r.Worker, RunID: r.ID, Lease: r.Lease})
		}),
		// A beat renews the holder's lease with its progress.
		jobs.Beat: onJob(func(ctx context.Context, r call[events.GepaProgress]) (any, error) {
			return jobAck(c.onGepa(ctx, r.ID, WorkerActor(r.Worker), func(st rewardmodels.GepaState) (string, any, error) {
				return events.GepaRunHeartbeat, events.GepaRunHeartbeatV1{RunID: r.ID, WorkerID: r.Worker, Progress: r.Body},
					rewardmodels.CheckGepaHolder(st, r.ID, r.Worker)
			}))
		}),
		// A report is one evaluated proposal (it also renews the lease).
		jobs.Report: onJob(func(ctx context.Context, r call[events.GepaRunCandidateEvaluatedV1]) (any, error) {
			cand := r.Body
			if cand.Score != nil && !unit(*cand.Score) || !unit(cand.MinibatchScore) || !unit(cand.ParentMinibatchScore) {
				return jobAck(Result{}, domain.Invalid("candidate scores must be finite numbers between 0 and 1"))
			}
			if cand.Progress.MetricCalls < 0 {
				return jobAck(Result{}, domain.Invalid("progress.metric_calls must not be negative"))
			}
			cand.RunID = r.ID
			return jobAck(c.onGepa(ctx, r.ID, WorkerActor(r.Worker), func(st rewardmodels.GepaState) (string, any, error) {
				if err := rewardmodels.CheckGepaHolder(st, r.ID, r.Worker); err != nil {
					return "", nil, err
				}
				if cand.Progress.MetricCalls > st.Requested.MaxMetricCalls {
					return "", nil, domain.Invalid("progress.metric_calls %d exceeds the run's max_metric_calls %d", cand.Progress.MetricCalls, st.Requested.MaxMetricCalls)
				}
				return events.GepaRunCandidateEvaluated, cand, nil
			}))
		}),
		// The result is the holder's result.json, checked (CheckGepaResult).
		jobs.Finish: onJob(func(ctx context.Context, r call[json.RawMessage]) (any, error) {
			return jobAck(c.onGepa(ctx, r.ID, WorkerActor(r.Worker), func(st rewardmodels.GepaState) (string, any, error) {
				if err := rewardmodels.CheckGepaHolder(st, r.ID, r.Worker); err != nil {
					return "", nil, err
				}
				_, err := CheckGepaResult(r.Body, st.Requested.MaxMetricCalls)
				return events.GepaRunSucceeded, events.GepaRunSucceededV1{RunID: r.ID, Result: r.Body}, err
			}))
		}),
		// A failure carries the end of the worker's log.
		jobs.Fail: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(c.onGepa(ctx, r.ID, WorkerActor(r.Worker), func(st rewardmodels.GepaState) (string, any, error) {
				return events.GepaRunFailed, events.GepaRunFailedV1{RunID: r.ID, Error: tail(r.Error, 2000)}, rewardmodels.CheckGepaHolder(st, r.ID, r.Worker)
			}))
		}),
		// A hand-back returns the run to the queue (the worker is stopping);
		// the dispatch projection publishes the job again.
		jobs.HandBack: onJob(func(ctx context.Context, r call[struct{}]) (any, error) {
			return jobAck(c.onGepa(ctx, r.ID, WorkerActor(r.Worker), func(st rewardmodels.GepaState) (string, any, error) {
				p, err := rewardmodels.DecideGepaHandBack(st, r.ID, r.Worker, r.Reason)
				return events.GepaRunRequeued, p, err
			}))
		}),
	}
}
