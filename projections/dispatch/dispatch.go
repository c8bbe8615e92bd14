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
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/jobs/lease"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/requestid"
	"github.com/criticml/critic/projections/readmodel"
)

// Name is the projection's consumer group.
const Name = "dispatch"

// Publisher publishes job commands.
type Publisher interface {
	Publish(topic string, msgs ...*message.Message) error
}

// Opener opens a stored event's payload (claim check, seal):
// eventstore.Store.Open. An erased one is *events.ErasedError.
type Opener interface {
	Open(ctx context.Context, e events.Envelope) (events.Envelope, error)
}

// Dispatcher is the dispatch projection.
type Dispatcher struct {
	cmds   *commands.Commands
	opener Opener
	pub    Publisher
	log    *slog.Logger
	// triggered are the kinds whose jobs an event alone asks for that this
	// deployment runs (jobs.TriggeredBy).
	triggered map[jobs.Kind]bool
	// bgBatch and bgOutcome count background scoring (WithBackgroundMetrics).
	bgBatch   func(traces int)
	bgOutcome func(outcome string)
	// bgWake wakes background scoring when a batch's run ends.
	bgWake *BackgroundWake
}

// New returns the dispatcher. opener is the store the events come from (the
// one cmds writes to): it opens a batch's sealed and claim-checked payloads.
func New(cmds *commands.Commands, opener Opener, pub Publisher, log *slog.Logger) *Dispatcher {
	return &Dispatcher{cmds: cmds, opener: opener, pub: pub, log: log}
}

// WithTitles turns title jobs on (the deployment has a fast model).
func (d *Dispatcher) WithTitles(on bool) *Dispatcher { return d.turn(jobs.KindTitle, on) }

// WithLabeler turns step-label jobs on (the deployment has a step-label
// model).
func (d *Dispatcher) WithLabeler(on bool) *Dispatcher { return d.turn(jobs.KindLabel, on) }

// WithAssessments turns section-summary and completion jobs on (the
// deployment has a fast model).
func (d *Dispatcher) WithAssessments(on bool) *Dispatcher { return d.turn(jobs.KindAssess, on) }

func (d *Dispatcher) turn(kind jobs.Kind, on bool) *Dispatcher {
	if d.triggered == nil {
		d.triggered = map[jobs.Kind]bool{}
	}
	d.triggered[kind] = on
	return d
}

// Apply handles a batch in order; an error makes the bus redeliver it.
func (d *Dispatcher) Apply(ctx context.Context, envs []events.Envelope) error {
	envs, err := d.open(ctx, envs)
	if err != nil {
		return err
	}
	for _, e := range envs {
		if err := d.apply(ctx, e); err != nil {
			return fmt.Errorf("dispatch %s %s: %w", e.Type, e.ID, err)
		}
	}
	if err := d.evaluatorScoring(ctx, envs); err != nil {
		return fmt.Errorf("dispatch shared-evaluator scoring: %w", err)
	}
	return nil
}

// open opens the sealed payloads of a batch (a trace's events) and drops
// erased ones: a job is never published for content that no longer exists.
func (d *Dispatcher) open(ctx context.Context, envs []events.Envelope) ([]events.Envelope, error) {
	needsOpening := func(e events.Envelope) bool { return events.IsSealed(e.Payload) || eventstore.IsClaimCheck(e.Payload) }
	if !slices.ContainsFunc(envs, needsOpening) {
		return envs, nil
	}
	out := make([]events.Envelope, 0, len(envs))
	for _, e := range envs {
		if !needsOpening(e) {
			out = append(out, e)
			continue
		}
		r, err := d.opener.Open(ctx, e)
		if eventstore.IsErased(err) {
			continue
		}
		if _, ok := errors.AsType[*events.UnreadableError](err); ok {
			// A lost claim-checked blob: the event goes on as stored, as it
			// did before payloads were opened here; the read model parks it.
			out = append(out, e)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("dispatch %s %s: %w", e.Type, e.ID, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (d *Dispatcher) apply(ctx context.Context, e events.Envelope) error {
	// What this event causes (a dataset, a job) keeps its request's id.
	ctx = requestid.With(ctx, e.CorrelationID)
	d.countBackground(e)
	for _, t := range jobs.TriggeredBy(e, func(k jobs.Kind) bool { return d.triggered[k] }) {
		if err := d.publish(jobs.TopicOf(t.Kind), t.Job.JobID(), e.CorrelationID, t.Job); err != nil {
			return err
		}
	}
	switch e.Type {
	case events.RewardModelRequested, events.RewardModelRetried:
		var p struct {
			ModelID string `json:"model_id"`
		}
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if published, err := d.publishExtract(ctx, p.ModelID, e); err != nil || published {
			return err
		}
		_, err := d.cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: p.ModelID})
		return err
	case events.RewardModelExtractionRequeued:
		// The holder's lease ran out: the next free worker continues it.
		var p events.RewardModelExtractionRequeuedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		// Already claimed again, finished or failed: nothing is published.
		_, err := d.publishExtract(ctx, p.ModelID, e)
		return err
	case events.RewardModelExtractionFinished:
		var p events.RewardModelExtractionFinishedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if p.Error != "" {
			return nil // the attempt failed in the same append
		}
		_, err := d.cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: p.ModelID})
		return err
	case events.RewardModelDatasetBuilt:
		var p events.RewardModelDatasetBuiltV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return d.publish(jobs.TopicTrain, p.ModelID, e.CorrelationID, jobs.TrainJob{ModelID: p.ModelID, Attempt: p.Attempt, OwnerID: e.OwnerID})
	case events.RewardModelTrainingRequeued:
		// A handed-back or lost attempt is claimable again: wake a free
		// worker now rather than at its next poll.
		var p events.RewardModelTrainingRequeuedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return d.publish(jobs.TopicTrain, p.ModelID, e.CorrelationID, jobs.TrainJob{ModelID: p.ModelID, Attempt: p.Attempt, OwnerID: e.OwnerID})
	case events.ScoringRunRequested:
		var p events.ScoringRunRequestedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		if p.BatchID != "" {
			return nil // its batch's job runs it (ScoringBatchRequested)
		}
		return d.publish(jobs.TopicScore, p.RunID, e.CorrelationID, jobs.ScoreJob{RunID: p.RunID, TraceID: p.TraceID, ModelID: p.ModelID, OwnerID: e.OwnerID})
	case events.ScoringBatchRequested:
		var p events.ScoringBatchRequestedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return d.publish(jobs.TopicScoreBatch, p.BatchID, e.CorrelationID, jobs.ScoreBatchJob{BatchID: p.BatchID, ModelID: p.ModelID, OwnerID: e.OwnerID})
	case events.ScoringRunRequeued:
		// Handed back by a stopping worker: the next free worker scores it.
		var p events.ScoringRunRequeuedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return d.publish(jobs.TopicScore, p.RunID, e.CorrelationID, jobs.ScoreJob{RunID: p.RunID, TraceID: p.TraceID, ModelID: p.ModelID, OwnerID: e.OwnerID})
	case events.EvaluatorCandidateRequested:
		var p events.EvaluatorCandidateRequestedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return d.publish(jobs.TopicEvaluatorTrain, p.CandidateID, e.CorrelationID, jobs.EvaluatorTrainJob{CandidateID: p.CandidateID})
	case events.EvaluatorCandidateRequeued:
		// Handed back by a stopping worker: the next free worker trains it.
		var p events.EvaluatorCandidateRequeuedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return d.publish(jobs.TopicEvaluatorTrain, p.CandidateID, e.CorrelationID, jobs.EvaluatorTrainJob{CandidateID: p.CandidateID})
	case events.GepaRunRequested:
		var p events.GepaRunRequestedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return d.publish(jobs.TopicGepa, p.RunID, e.CorrelationID, jobs.GepaJob{RunID: p.RunID, OwnerID: e.OwnerID})
	case events.GepaRunRequeued:
		// Handed back or lease expired: the next free worker runs it.
		var p events.GepaRunRequeuedV1
		if err := e.DecodeOrFail(&p); err != nil {
			return err
		}
		return d.publish(jobs.TopicGepa, p.RunID, e.CorrelationID, jobs.GepaJob{RunID: p.RunID, OwnerID: e.OwnerID})
	}
	return nil
}

// publish sends a job command; its correlation id travels as message
// metadata (a Kafka header), so the worker reports under the same id.
func (d *Dispatcher) publish(topic, key, correlationID string, job any) error {
	m, err := jobMessage(key, correlationID, job)
	if err != nil {
		return err
	}
	if err := d.pub.Publish(topic, m); err != nil {
		// The broker is unreachable or slow: an outage, not a fault of the
		// event, so the guard redelivers the batch instead of parking it.
		return &domain.UnavailableError{Message: fmt.Sprintf("publish a job on %s: %v", topic, err)}
	}
	return nil
}

// jobMessage is a job command partitioned by key, its correlation id in the
// message metadata (none when "").
func jobMessage(key, correlationID string, job any) (*message.Message, error) {
	raw, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	m := message.NewMessage(uuid.NewString(), raw)
	m.Metadata.Set(bus.MetadataPartitionKey, key)
	if correlationID != "" {
		m.Metadata.Set(requestid.MetadataKey, correlationID)
	}
	return m, nil
}

// LeaseQueries finds running models whose lease ran out and scoring runs
// that never finished, and tells the time by the database's clock.
type LeaseQueries interface {
	DBNow(ctx context.Context) (time.Time, error)
	ExpiredLeases(ctx context.Context, now time.Time) ([]string, error)
	StuckScoringRuns(ctx context.Context, cutoff time.Time) ([]readmodel.StuckRun, error)
	ExpiredGepaLeases(ctx context.Context, now time.Time) ([]string, error)
	ExtractingModels(ctx context.Context) ([]string, error)
}

// ScoringTimeout is how long a scoring run may run before it is failed.
const ScoringTimeout = 10 * time.Minute

// SweepLeases requeues (or, after lease.MaxLostRuns lost runs,
// fails), every interval, the running models whose worker stopped
// heartbeating. The model's stream decides; the read model only nominates.
// For one lease after start it expires nothing: workers that kept training
// while this API was down need that long to reach it again.
//
// One clock: heartbeats and starts are timed by Postgres (events'
// recorded_at), so expiry is decided against Postgres's clock too (DBNow),
// not this host's — an API host whose clock runs ahead would otherwise fail
// live jobs, and one that runs behind would keep dead ones. The grace
// period after start is this process's own elapsed (monotonic) time.
//
// Feedback extractions whose lease ran out are requeued the same way
// (reward_model.extraction_requeued.v1; Apply publishes the job again), so
// a worker handed a held extraction can skip it rather than wait.
//
// onExpire, when given, is told the kind ("train", "score", "gepa",
// "evaluator_train", "extract") of every job it
// failed (the lease-expiry metric).
func SweepLeases(ctx context.Context, q LeaseQueries, cmds *commands.Commands, interval, lease time.Duration, log *slog.Logger, onExpire ...func(kind string)) error {
	expired := func(kind string) {
		for _, f := range onExpire {
			f(kind)
		}
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	started := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if time.Since(started) < lease {
			continue
		}
		now, err := q.DBNow(ctx)
		if err != nil {
			log.Warn("lease sweep: read the database clock", "err", err)
			continue
		}
		for _, k := range leaseKinds(q, cmds, lease) {
			sweepKind(ctx, k, now, log, expired)
		}
	}
}

// leaseKind is one kind of leased job the sweep looks after: which jobs may
// have lost their worker (the read model nominates), and the command that
// lets the job's stream decide (an empty Result: nothing expired).
type leaseKind struct {
	kind   string // the lease-expiry metric's label
	what   string // log noun
	list   func(ctx context.Context, now time.Time) ([]leased, error)
	expire func(ctx context.Context, j leased, now time.Time) (commands.Result, error)
	// expired logs what happened to an expired job (requeued or failed).
	expired func(ctx context.Context, log *slog.Logger, id string)
}

// leased names one nominated job; scoring runs also need their trace,
// model and start.
type leased struct {
	id  string
	run readmodel.StuckRun
}

func ids(list []string, err error) ([]leased, error) {
	out := make([]leased, len(list))
	for i, id := range list {
		out[i] = leased{id: id}
	}
	return out, err
}

func leaseKinds(q LeaseQueries, cmds *commands.Commands, leaseFor time.Duration) []leaseKind {
	logAs := func(level slog.Level, msg, key string) func(context.Context, *slog.Logger, string) {
		return func(ctx context.Context, log *slog.Logger, id string) { log.Log(ctx, level, msg, key, id) }
	}
	return []leaseKind{{
		kind: "train", what: "model",
		list: func(ctx context.Context, now time.Time) ([]leased, error) { return ids(q.ExpiredLeases(ctx, now)) },
		expire: func(ctx context.Context, j leased, now time.Time) (commands.Result, error) {
			return cmds.ExpireLease.Handle(ctx, commands.ExpireLease{ModelID: j.id, Now: now})
		},
		expired: func(ctx context.Context, log *slog.Logger, id string) {
			if m, err := cmds.Streams.Model(ctx, id); err == nil && m.Status == rewardmodels.StatusQueued {
				log.Warn("lease expired: training requeued for another worker", "model", id,
					"lost_runs", len(m.Lost), "max_lost_runs", lease.MaxLostRuns)
			} else {
				log.Warn("lease expired: model failed", "model", id, "max_lost_runs", lease.MaxLostRuns)
			}
		},
	}, {
		kind: "gepa", what: "run",
		list: func(ctx context.Context, now time.Time) ([]leased, error) { return ids(q.ExpiredGepaLeases(ctx, now)) },
		expire: func(ctx context.Context, j leased, now time.Time) (commands.Result, error) {
			return cmds.ExpireGepaLease.Handle(ctx, commands.ExpireGepaLease{RunID: j.id, Now: now})
		},
		expired: logAs(slog.LevelInfo, "lease expired: GEPA run requeued (or failed after its third lost run)", "run"),
	}, {
		kind: "evaluator_train", what: "candidate",
		list: func(ctx context.Context, now time.Time) ([]leased, error) {
			return ids(cmds.Streams.ExpiredCandidateLeases(ctx, now, leaseFor))
		},
		expire: func(ctx context.Context, j leased, now time.Time) (commands.Result, error) {
			return cmds.ExpireCandidateLease.Handle(ctx, commands.ExpireCandidateLease{ID: j.id, Now: now, Fallback: leaseFor})
		},
		expired: logAs(slog.LevelWarn, "lease expired: evaluator candidate requeued (or failed after its third lost run)", "candidate"),
	}, {
		kind: "extract", what: "model",
		list: func(ctx context.Context, _ time.Time) ([]leased, error) { return ids(q.ExtractingModels(ctx)) },
		expire: func(ctx context.Context, j leased, now time.Time) (commands.Result, error) {
			return cmds.ExpireExtractionLease.Handle(ctx, commands.ExpireExtractionLease{ModelID: j.id, Now: now})
		},
		expired: logAs(slog.LevelWarn, "lease expired: feedback extraction requeued for another worker, its recorded findings kept (or the model failed after its third lost run)", "model"),
	}, {
		kind: "score", what: "run",
		list: func(ctx context.Context, now time.Time) ([]leased, error) {
			runs, err := q.StuckScoringRuns(ctx, now.Add(-ScoringTimeout))
			out := make([]leased, len(runs))
			for i, r := range runs {
				out[i] = leased{id: r.ID, run: r}
			}
			return out, err
		},
		expire: func(ctx context.Context, j leased, now time.Time) (commands.Result, error) {
			return cmds.ExpireScoringRun.Handle(ctx, commands.ExpireScoringRun{TraceID: j.run.TraceID, ModelID: j.run.ModelID, RunID: j.run.ID, StartedAt: j.run.StartedAt, Now: now, Timeout: ScoringTimeout})
		},
		expired: logAs(slog.LevelInfo, "scoring run gave no result in time: requeued (or failed after its third lost run)", "run"),
	}}
}

// sweepKind expires one kind's nominated jobs whose stream agrees.
func sweepKind(ctx context.Context, k leaseKind, now time.Time, log *slog.Logger, expired func(string)) {
	jobs, err := k.list(ctx, now)
	if err != nil {
		log.Warn("lease sweep: list", "kind", k.kind, "err", err)
		return
	}
	for _, j := range jobs {
		res, err := k.expire(ctx, j, now)
		if err != nil {
			log.Warn("lease sweep: expire", "kind", k.kind, k.what, j.id, "err", err)
			continue
		}
		if res.LastEventID != "" {
			expired(k.kind)
			k.expired(ctx, log, j.id)
		}
	}
}
