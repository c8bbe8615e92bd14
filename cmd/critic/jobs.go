package main

import (
	"time"

	"github.com/ThreeDotsLabs/watermill"

	"github.com/criticml/critic/handlers/apiserver"
	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/platform/relay"
	"github.com/criticml/critic/projections"
	jobdispatch "github.com/criticml/critic/projections/dispatch"
)

// startJobs runs the API side of the job pipeline: the dispatch projection
// (datasets, job commands), the lease sweeper and the retention sweep.
func startJobs(a *apiserver.Server, in *infra) {
	sub, err := bus.NewSubscriber(bus.Config{Brokers: a.Brokers, ConsumerGroup: jobdispatch.Name, Logger: a.Log}, watermill.NewSlogLogger(a.Log))
	if err != nil {
		in.log.Error("dispatch: subscriber", "err", err)
		return
	}
	d := jobdispatch.New(a.Cmds, in.store, a.Publisher, in.log).WithTitles(in.cfg.LLM.Fast != nil).WithLabeler(in.cfg.LLM.StepLabel != nil).
		WithAssessments(in.cfg.LLM.Fast != nil)
	wake := jobdispatch.NewBackgroundWake()
	d = d.WithBackgroundWake(wake)
	if a.Telemetry != nil && a.Telemetry.Metrics != nil {
		d = d.WithBackgroundMetrics(a.Telemetry.Metrics.BackgroundBatch, a.Telemetry.Metrics.BackgroundOutcome)
	}
	a.Go("dispatch", func() error {
		return projections.NewGuard(jobdispatch.Name, in.pool, in.store, d, in.log, projections.GuardOptions{}).Observe(jobdispatch.Name, a.Observer()).Run(a.Ctx, sub.ConsumeBatches, relay.Topic)
	}, sub.Close)
	var onExpire []func(string)
	if a.Telemetry != nil && a.Telemetry.Metrics != nil {
		onExpire = append(onExpire, a.Telemetry.Metrics.LeaseExpired)
	}
	a.Go("lease-sweeper", func() error {
		return jobdispatch.SweepLeases(a.Ctx, a.Queries, a.Cmds, time.Second, in.cfg.WorkerLease, in.log, onExpire...)
	}, nil)
	sweep := jobdispatch.NewRetention(a.Queries, a.Cmds, in.pool, time.Now, in.log)
	a.Go("retention", func() error { return sweep.Run(a.Ctx, in.cfg.RetentionInterval) }, nil)
	if in.cfg.BackgroundScoring {
		a.Go("background-scoring", func() error {
			return jobdispatch.RunBackgroundScoring(a.Ctx, a.Queries, a.Cmds, wake, a.Waiter, backgroundScoringTick(in.cfg.ScoringDebounce), in.cfg.ScoringDebounce, in.log)
		}, nil)
	}
}

// backgroundScoringTick is how often background scoring looks for work: a
// few seconds, or the debounce when that is shorter (tests set it small).
func backgroundScoringTick(debounce time.Duration) time.Duration {
	return max(min(3*time.Second, debounce), 200*time.Millisecond)
}
