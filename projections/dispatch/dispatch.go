// Package dispatch turns reward-model and scoring events into work: it builds
// a queued model's dataset (from the log) and publishes job commands on
// critic.jobs.train and critic.jobs.score for the workers' consumer group.
// Every effect is idempotent — building checks the model is still waiting for
// its dataset, and a duplicate job is refused by the worker service's claim —
// so at-least-once delivery needs no dedupe table here.
package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/projections/readmodel"
)

// Name is the projection's consumer group.
const Name = "dispatch"

// Job topics and their messages (the worker's contract).
const (
	TrainTopic = "critic.jobs.train"
	ScoreTopic = "critic.jobs.score"
)

// TrainJob asks a worker to train one attempt of a model.
type TrainJob struct {
	ModelID string `json:"model_id"`
	Attempt int    `json:"attempt"`
	OwnerID string `json:"owner_id"`
}

// ScoreJob asks a worker to run one scoring run.
type ScoreJob struct {
	RunID   string `json:"run_id"`
	TraceID string `json:"trace_id"`
	ModelID string `json:"model_id"`
	OwnerID string `json:"owner_id"`
}

// Publisher publishes job commands.
type Publisher interface {
	Publish(topic string, msgs ...*message.Message) error
}

// Dispatcher is the dispatch projection.
type Dispatcher struct {
	cmds *commands.Commands
	pub  Publisher
	log  *slog.Logger
}

// New returns the dispatcher.
func New(cmds *commands.Commands, pub Publisher, log *slog.Logger) *Dispatcher {
	return &Dispatcher{cmds: cmds, pub: pub, log: log}
}

// Apply handles a batch in order; an error makes the bus redeliver it.
func (d *Dispatcher) Apply(ctx context.Context, envs []events.Envelope) error {
	for _, e := range envs {
		if err := d.apply(ctx, e); err != nil {
			return fmt.Errorf("dispatch %s %s: %w", e.Type, e.ID, err)
		}
	}
	return nil
}

func (d *Dispatcher) apply(ctx context.Context, e events.Envelope) error {
	switch e.Type {
	case events.RewardModelRequested, events.RewardModelRetried:
		var p struct {
			ModelID string `json:"model_id"`
		}
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		_, err := d.cmds.BuildDataset(ctx, p.ModelID)
		return err
	case events.RewardModelDatasetBuilt:
		var p events.RewardModelDatasetBuiltV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return d.publish(TrainTopic, p.ModelID, TrainJob{ModelID: p.ModelID, Attempt: p.Attempt, OwnerID: e.OwnerID})
	case events.ScoringRunRequested:
		var p events.ScoringRunRequestedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return d.publish(ScoreTopic, p.RunID, ScoreJob{RunID: p.RunID, TraceID: p.TraceID, ModelID: p.ModelID, OwnerID: e.OwnerID})
	}
	return nil
}

func (d *Dispatcher) publish(topic, key string, job any) error {
	raw, err := json.Marshal(job)
	if err != nil {
		return err
	}
	m := message.NewMessage(uuid.NewString(), raw)
	m.Metadata.Set("partition_key", key)
	return d.pub.Publish(topic, m)
}

// LeaseQueries finds running models whose lease ran out and scoring runs
// that never finished.
type LeaseQueries interface {
	ExpiredLeases(ctx context.Context, now time.Time) ([]string, error)
	StuckScoringRuns(ctx context.Context, cutoff time.Time) ([]readmodel.StuckRun, error)
}

// ScoringTimeout is how long a scoring run may run before it is failed.
const ScoringTimeout = 10 * time.Minute

// SweepLeases fails, every interval, the running models whose worker stopped
// heartbeating. The model's stream decides; the read model only nominates.
// For one lease after start it expires nothing: workers that kept training
// while this API was down need that long to reach it again.
func SweepLeases(ctx context.Context, q LeaseQueries, cmds *commands.Commands, interval, lease time.Duration, log *slog.Logger) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	started := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now := time.Now()
		if now.Sub(started) < lease {
			continue
		}
		ids, err := q.ExpiredLeases(ctx, now)
		if err != nil {
			log.Warn("lease sweep", "err", err)
			continue
		}
		for _, id := range ids {
			if _, err := cmds.ExpireLease(ctx, id, now); err != nil {
				log.Warn("lease sweep: expire", "model", id, "err", err)
			} else {
				log.Info("lease expired: model failed", "model", id)
			}
		}
		runs, err := q.StuckScoringRuns(ctx, now.Add(-ScoringTimeout))
		if err != nil {
			log.Warn("scoring sweep", "err", err)
			continue
		}
		for _, r := range runs {
			if _, err := cmds.ExpireScoringRun(ctx, r.TraceID, r.ModelID, r.ID, r.StartedAt, now, ScoringTimeout); err != nil {
				log.Warn("scoring sweep: expire", "run", r.ID, "err", err)
			}
		}
	}
}
