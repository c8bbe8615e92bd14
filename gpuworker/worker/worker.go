// Package worker is the gpuworker's job loop (DESIGN §8): it consumes the train,
// score, feedback-extraction and title commands from Kafka as a member of the "workers" consumer group,
// claims each job through the API's worker service (so a duplicate or stale
// delivery is answered 409 and skipped), reads its inputs from the blob store,
// trains or scores with gpuworker/train and gpuworker/model, writes the
// checkpoint archive and score files back to the blob store and reports the
// result through the same service. Workers hold a worker token, the Kafka
// address and blob-store access, never database credentials.
//
// A job's Kafka offset is committed only after the job finished — succeeded,
// or its failure was reported — or, for a long job that released its
// topic's partitions (releasesWhileBusy), by whichever worker gets its
// redelivery and is refused by the claim. A worker that dies mid-job
// leaves the message uncommitted; the API expires the lease, and a
// redelivery is refused by the claim.
package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/grade"
	"github.com/criticml/critic/gpuworker/hub"
	"github.com/criticml/critic/gpuworker/label"
	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/train"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/bus"
	"github.com/criticml/critic/platform/llm"
	"github.com/criticml/critic/platform/requestid"
)

// Kafka topics and the consumer group every worker joins (domain/jobs).
const (
	TopicTrain    = jobs.TopicTrain
	TopicScore    = jobs.TopicScore
	ConsumerGroup = jobs.ConsumerGroup
)

// DefaultLabelJobs is Config.LabelJobs's default.
const DefaultLabelJobs = 4

// DefaultShortJobs is Config.ShortJobs's default.
const DefaultShortJobs = 2

// How a job topic is consumed so that a busy worker never holds back a job
// a free worker could run (README "Workers: who takes which job"):
//
//   - long jobs (minutes: GEPA, scoring, evaluator candidates, feedback
//     extraction) release:
//     once one has run ReleaseBusyAfter, the
//     consumer leaves the topic's group, its partitions move to the other
//     workers, and the jobs queued behind it run there. The job's message
//     stays uncommitted, so a crash before the claim loses nothing; its
//     redelivery is refused by the claim (the run is no longer queued).
//   - short jobs (seconds: titles, assessments, automatic scoring) run
//     ShortJobs at a time, each its own group member, so one slow model
//     call does not stop the kind; leaving the group per job would cost a
//     rebalance of every topic of the group for each one.
//   - labels run LabelJobs at a time; training is pulled (trainLoop), and
//     its wake-up messages reach every worker (WakeGroup).
//   - feedback extraction releases like the long jobs: a redelivered
//     extraction whose lease another worker holds is skipped (committed),
//     and the API's lease sweep requeues and republishes one whose holder
//     died, so it resumes on the next free worker with its findings kept.
func releasesWhileBusy(topic string) bool {
	switch topic {
	case TopicGepa, TopicScore, TopicEvaluatorTrain, TopicExtract:
		return true
	}
	return false
}

func shortJob(topic string) bool {
	return topic == TopicTitle || topic == TopicAssess || topic == TopicEvaluatorScore
}

// TrainMessage is a critic.jobs.train value (key = model id).
type TrainMessage = jobs.TrainJob

// ScoreMessage is a critic.jobs.score value (key = run id).
type ScoreMessage = jobs.ScoreJob

// Config is what a worker needs. APIURL, Token, WorkerID (or Client), Brokers,
// Blobs and DataDir are required.
type Config struct {
	APIURL   string // the API's base URL (CRITIC_API_URL)
	Token    string // worker token
	WorkerID string // sent with every claim and report
	Brokers  []string
	Blobs    blob.Store
	DataDir  string // scratch: DataDir/worker/{jobs,checkpoints}, base models in DataDir/models
	Log      *slog.Logger

	// Client overrides the worker-service client built from APIURL, Token, WorkerID.
	Client *Client
	// Hub resolves base models; default hub.NewFromEnv() caching under DataDir/models.
	Hub *hub.Client
	// ConsumerGroup defaults to "workers".
	ConsumerGroup string
	// HeartbeatMinInterval bounds progress heartbeats (default 1 s).
	HeartbeatMinInterval time.Duration
	// ReportRetryFor is how long a result report is retried while the API is
	// unreachable or answers 5xx (default 5 min). Claims are retried until
	// shutdown: the job stays with this worker, uncommitted.
	ReportRetryFor time.Duration
	// KeepJobDirs keeps DataDir/worker/jobs/<model>/attempt-<n> after a job.
	KeepJobDirs bool
	// TrainOptions, when set, adjusts each job's train.Options (tests).
	TrainOptions func(*train.Options)
	// Observer, when set, sees every job and its throughput (metrics, spans).
	Observer Observer
	// LLMObserver, when set, sees every model-provider request of the
	// clients the worker makes itself (GEPA's task and reflection models);
	// the role clients above come observed from cmd/critic.
	LLMObserver llm.Observer
	// Feedback is the feedback model extraction jobs call (nil: none is
	// configured; FeedbackUnavailable says what to set, and extraction jobs
	// fail with it).
	Feedback            *llm.Client
	FeedbackUnavailable string
	// Fast is the title model (nil: titles stay derived).
	Fast            *llm.Client
	FastUnavailable string
	// Getenv reads the provider keys GEPA's task and reflection models need
	// (OPENAI_API_KEY, ANTHROPIC_API_KEY, their base URLs); default os.Getenv.
	Getenv llm.Getenv
	// StepLabel labels trace chunks (nil: label jobs are skipped and traces
	// stay unlabeled; StepLabelUnavailable says what to set).
	StepLabel            *label.Labeler
	StepLabelUnavailable string
	// Grader asks the quality checks of the step scores after a trace is
	// labeled (CRITIC_GRADING_MODEL; nil: no checks, the step scores are
	// the rules alone; GraderUnavailable says why).
	Grader            *grade.Grader
	GraderUnavailable string
	// Compute is where this worker runs, as the model's compute shows it:
	// "worker" (default, a `critic worker`) or "local" (the API's
	// in-process worker of `critic run`).
	Compute string
	// ClaimPollInterval is how often an idle worker asks for a queued
	// training attempt when no wake-up message arrived (default 2 s): the
	// bound on how long a model waits while a worker is free.
	ClaimPollInterval time.Duration
	// LabelJobs is how many label jobs (traces) this worker runs at once
	// (CRITIC_WORKER_LABEL_JOBS, default 4): they share the step-label
	// client's concurrency cap, so one trace's last few calls do not leave
	// the rest of the cap idle. Each is its own consumer of
	// critic.jobs.label in the group (the topic has 8 partitions).
	LabelJobs int
	// ShortJobs is how many title, assessment and automatic-scoring jobs
	// this worker runs at once per kind (default 2): short jobs keep
	// being consumed while one of them waits on a model.
	ShortJobs int
	// ReleaseBusyAfter is how long a long job (GEPA, scoring, evaluator
	// candidate) runs before its consumer gives the
	// topic's partitions up (default 2 s), so the jobs queued behind it go
	// to free workers; the consumer rejoins when the job ends.
	ReleaseBusyAfter time.Duration
}

// Observer is what the worker reports about its jobs; package telemetry
// implements it. JobStarted returns the job's context (carrying its span) and
// the func that ends it with an outcome: succeeded, failed, refused (not
// claimable), lease_lost or interrupted.
type Observer interface {
	JobStarted(ctx context.Context, kind, correlationID string) (context.Context, func(outcome string, err error))
	TrainStep(tokensPerSec float64)
	Scored(sequences int, elapsed time.Duration)
}

type noObserver struct{}

func (noObserver) JobStarted(ctx context.Context, _, _ string) (context.Context, func(string, error)) {
	return ctx, func(string, error) {}
}
func (noObserver) TrainStep(float64)         {}
func (noObserver) Scored(int, time.Duration) {}

// Worker runs jobs; see Run.
type Worker struct {
	cfg    Config
	client *Client
	hub    *hub.Client
	log    *slog.Logger

	mu     sync.Mutex // guards loaded (the score loop uses it; Close frees it)
	loaded *loadedModel

	// wake is poked by a critic.jobs.train message: an idle training loop
	// asks for work now instead of at its next poll.
	wake chan struct{}
	// api is whether the API answers; the consumers leave their topics
	// while it does not.
	api *apiHealth
}

type loadedModel struct {
	key string
	rm  *model.RewardModel
}

// New validates cfg and fills defaults.
func New(cfg Config) (*Worker, error) {
	var errs []error
	if cfg.Client == nil {
		if cfg.APIURL == "" {
			errs = append(errs, errors.New("worker: APIURL is required (CRITIC_API_URL)"))
		}
		if cfg.Token == "" {
			errs = append(errs, errors.New("worker: Token is required (CRITIC_WORKER_TOKEN)"))
		}
		if cfg.WorkerID == "" {
			errs = append(errs, errors.New("worker: WorkerID is required"))
		}
	}
	if cfg.Blobs == nil {
		errs = append(errs, errors.New("worker: Blobs is required (BLOB_URL)"))
	}
	if cfg.DataDir == "" {
		errs = append(errs, errors.New("worker: DataDir is required (CRITIC_DATA_DIR)"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.ConsumerGroup == "" {
		cfg.ConsumerGroup = ConsumerGroup
	}
	if cfg.HeartbeatMinInterval <= 0 {
		cfg.HeartbeatMinInterval = time.Second
	}
	if cfg.ReportRetryFor <= 0 {
		cfg.ReportRetryFor = 5 * time.Minute
	}
	if cfg.Observer == nil {
		cfg.Observer = noObserver{}
	}
	if cfg.LabelJobs <= 0 {
		cfg.LabelJobs = DefaultLabelJobs
	}
	if cfg.ShortJobs <= 0 {
		cfg.ShortJobs = DefaultShortJobs
	}
	if cfg.ReleaseBusyAfter <= 0 {
		cfg.ReleaseBusyAfter = 2 * time.Second
	}
	if cfg.Compute == "" {
		cfg.Compute = rewardmodels.ComputeWorker
	}
	if cfg.ClaimPollInterval <= 0 {
		cfg.ClaimPollInterval = 2 * time.Second
	}
	w := &Worker{cfg: cfg, client: cfg.Client, hub: cfg.Hub, log: cfg.Log, wake: make(chan struct{}, 1), api: newAPIHealth()}
	if w.client == nil {
		w.client = NewClient(cfg.APIURL, cfg.Token, cfg.WorkerID)
	}
	if w.hub == nil {
		w.hub = hub.NewFromEnv()
		w.hub.CacheDir = filepath.Join(cfg.DataDir, "models")
		// Base models come from tenants' requests: local ones only from
		// the cache and the operator's roots, HF_TOKEN only for the models
		// the operator lists.
		if err := w.hub.ForTenants(os.Getenv); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// handlers maps every job topic of domain/jobs to the handler that runs it.
func (w *Worker) handlers() map[string]func(context.Context, []byte) bool {
	return map[string]func(context.Context, []byte) bool{
		TopicTrain: w.WakeTraining, TopicScore: w.HandleScore, TopicExtract: w.HandleExtract, TopicTitle: w.HandleTitle,
		TopicAssess: w.HandleAssess, TopicGepa: w.HandleGepa, TopicLabel: w.HandleLabel,
		TopicEvaluatorTrain: w.HandleEvaluatorTrain, TopicEvaluatorScore: w.HandleEvaluatorScore,
	}
}

// Run checks the API (address and token), then pulls training attempts
// whenever it is free and consumes the other job topics concurrently (see
// releasesWhileBusy for how many at a time, and how a long job lets the
// others go) until ctx ends, then returns nil. An in-flight
// training attempt is stopped and handed back to the queue, where the next
// free worker takes it.
func Run(ctx context.Context, cfg Config) error {
	w, err := New(cfg)
	if err != nil {
		return err
	}
	defer w.Close()
	return w.Run(ctx)
}

// Run is the package-level Run for an existing Worker.
func (w *Worker) Run(ctx context.Context) error {
	if len(w.cfg.Brokers) == 0 {
		return errors.New("worker: no Kafka brokers (KAFKA_BROKERS)")
	}
	// No job before the API answers: a worker that cannot report would
	// only hold work other workers could do.
	if err := w.AwaitAPI(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	sub, err := bus.NewSubscriber(bus.Config{Brokers: w.cfg.Brokers, ConsumerGroup: w.cfg.ConsumerGroup,
		ClientID: "critic-worker", CommitInterval: -1, Logger: w.log}, watermill.NewSlogLogger(w.log))
	if err != nil {
		return err
	}
	defer sub.Close()
	// Train messages only wake an idle training loop, so every worker must
	// see every one: in the shared group a wake-up lands on whichever member
	// holds its partition — often a busy one — and the idle worker waited
	// for its next claim poll. A group of this worker's own (new ones start
	// at the topic's beginning, and any number of old wake-ups is one claim)
	// hands it all of them.
	wakeSub, err := bus.NewSubscriber(bus.Config{Brokers: w.cfg.Brokers, ConsumerGroup: w.WakeGroup(),
		ClientID: "critic-worker", CommitInterval: time.Second, Logger: w.log}, watermill.NewSlogLogger(w.log))
	if err != nil {
		return err
	}
	defer wakeSub.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	type consumer struct {
		sub    *bus.Subscriber
		topic  string
		handle func(context.Context, []byte) bool
	}
	handlers := w.handlers()
	var consumers []consumer
	for _, topic := range jobs.Topics() {
		h, ok := handlers[topic]
		switch {
		case !ok:
			return fmt.Errorf("this worker has no handler for job topic %s", topic)
		case topic == TopicTrain:
			consumers = append(consumers, consumer{wakeSub, topic, h})
		case shortJob(topic):
			for range w.cfg.ShortJobs {
				consumers = append(consumers, consumer{sub, topic, h})
			}
		case topic != TopicLabel:
			consumers = append(consumers, consumer{sub, topic, h})
		case w.cfg.StepLabel != nil:
			for range w.cfg.LabelJobs {
				consumers = append(consumers, consumer{sub, topic, h})
			}
			if w.cfg.Grader == nil {
				w.log.Info("no quality checks: step scores are the rules alone", "reason", w.cfg.GraderUnavailable)
			} else {
				w.log.Info("quality checks on", "grading_model", w.cfg.Grader.Model())
			}
		default:
			// A worker without a step-label model leaves label jobs to
			// workers that have one (it would only drop them).
			w.log.Info("not consuming label jobs: no step-label model", "reason", w.cfg.StepLabelUnavailable)
		}
	}
	for _, t := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.consume(ctx, t.sub, t.topic, t.handle); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.trainLoop(ctx)
	}()
	topics := make([]string, len(consumers))
	for i, c := range consumers {
		topics[i] = c.topic
	}
	gogc := model.SetEngineGC() // this process scores and trains: see model.EngineGCPercent
	w.log.Info("worker consuming", "topics", topics, "group", w.cfg.ConsumerGroup, "wake_group", w.WakeGroup(),
		"brokers", strings.Join(w.cfg.Brokers, ","), "cpu_kernels", model.CPUKernels(), "matmul", model.MatmulKernel(), "ops", model.ExecutorsStatus(), "gogc", gogc)
	if advice := model.CPUKernelsAdvice(); advice != "" {
		w.log.Warn(advice)
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// consume hands each message of topic to handle and acknowledges it (committing
// its offset) once handle reports the job finished. handle returns false only
// when ctx ended mid-job: the message is then left unacknowledged. While the
// API cannot be reached it holds no subscription: it leaves the topic's
// group between jobs (its partitions go to the other workers) and joins
// again once the API answers.
func (w *Worker) consume(ctx context.Context, sub *bus.Subscriber, topic string, handle func(context.Context, []byte) bool) error {
	for attempt := 1; ; attempt++ {
		if !w.api.waitUp(ctx) {
			return nil
		}
		sctx, leave := context.WithCancel(ctx)
		msgs, err := sub.Subscribe(sctx, topic)
		if err != nil {
			leave()
			if ctx.Err() != nil {
				return nil
			}
			w.log.Error("subscribing; retrying", "topic", topic, "error", err)
			if !sleep(ctx, backoff(attempt, 30*time.Second)) {
				return nil
			}
			continue
		}
		for {
			down, changed := w.api.state()
			if down {
				break
			}
			var msg *message.Message
			var ok bool
			select {
			case <-ctx.Done():
				leave()
				return nil
			case <-changed:
				continue
			case msg, ok = <-msgs:
			}
			if !ok {
				leave()
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("worker: subscription to %s ended", topic)
			}
			if down, _ := w.api.state(); down {
				msg.Nack() // not started: the next owner of the partition gets it
				break
			}
			// The job keeps the correlation id of the request that caused it.
			jctx := requestid.With(ctx, msg.Metadata.Get(requestid.MetadataKey))
			if !releasesWhileBusy(topic) {
				if !handle(jctx, msg.Payload) {
					leave()
					return nil
				}
				msg.Ack()
				continue
			}
			finished, released := w.runReleasing(jctx, topic, msg.Payload, handle, func() {
				leave()
				for range msgs {
				}
			})
			if !finished {
				leave()
				return nil
			}
			if released {
				break // rejoin the group
			}
			msg.Ack()
		}
		leave() // the API is down or a long job released the partitions
		for range msgs {
		}
		attempt = 0
	}
}

// runReleasing runs a long job; once it has run ReleaseBusyAfter it calls
// release (the consumer leaves the topic's group, so the jobs queued behind
// this one go to free workers) and waits for the job. finished is handle's
// answer; released says the partitions were given up, so the message cannot
// be acknowledged: whoever owns its partition next gets it again, and its
// claim refuses it (the run is no longer queued) and commits it.
func (w *Worker) runReleasing(ctx context.Context, topic string, payload []byte, handle func(context.Context, []byte) bool, release func()) (finished, released bool) {
	done := make(chan bool, 1)
	go func() { done <- handle(ctx, payload) }()
	t := time.NewTimer(w.cfg.ReleaseBusyAfter)
	defer t.Stop()
	select {
	case finished = <-done:
		return finished, false
	case <-t.C:
	}
	w.log.Info("long job running: leaving the topic's consumer group until it ends, so free workers take the jobs behind it", "topic", topic)
	release()
	return <-done, true
}

// withRequestID adds the job's request id to a job logger's attributes, so
// every line of the job carries the id of the request that caused it.
func withRequestID(ctx context.Context, args ...any) []any {
	if id := requestid.From(ctx); id != "" {
		args = append(args, "request_id", id)
	}
	return args
}

// Close frees the cached scoring model.
func (w *Worker) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.loaded != nil {
		w.loaded.rm.Model.Finalize()
		w.loaded = nil
	}
}

var errLeaseLost = errors.New("lease lost")

// handBack returns a job this stopping worker holds to the queue (hand
// with reason "worker <id> is shutting down"), within 10 s of ctx ending;
// ifFailed says what happens to the job when the API cannot be told.
func (w *Worker) handBack(ctx context.Context, log *slog.Logger, what, ifFailed string, hand func(ctx context.Context, reason string) error) {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	log.Warn("worker shutting down: handing the " + what + " back to the queue")
	if err := hand(hctx, "worker "+w.client.WorkerID+" is shutting down"); err != nil {
		log.Error("could not hand the "+what+" back; "+ifFailed, "error", err)
	}
}

// WakeGroup is the consumer group of this worker alone that reads
// critic.jobs.train (see Run): "<group>.wake.<worker id>".
func (w *Worker) WakeGroup() string { return w.cfg.ConsumerGroup + ".wake." + w.client.WorkerID }

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
	for ctx.Err() == nil {
		claim, err := w.client.ClaimNextTraining(ctx, w.cfg.Compute)
		switch {
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
func (w *Worker) RunTraining(ctx context.Context, claim *TrainingClaim) bool {
	if claim.CorrelationID != "" {
		ctx = requestid.With(ctx, claim.CorrelationID)
	}
	m := TrainMessage{ModelID: claim.ModelID, Attempt: claim.Attempt, OwnerID: claim.OwnerID}
	log, tail := jobLogger(w.log, withRequestID(ctx, "job", "train", "model_id", m.ModelID, "attempt", m.Attempt)...)
	ctx, endJob := w.cfg.Observer.JobStarted(ctx, "train", requestid.From(ctx))
	outcome, jobErr, finished := w.runClaimed(ctx, log, tail, m, claim)
	endJob(outcome, jobErr)
	return finished
}

// HandleTrain claims and runs the attempt a critic.jobs.train message
// names (a duplicate or stale one is refused by the claim and skipped):
// one job driven by hand, as tools and tests do. Run does not use it: it
// pulls (RunTraining). It returns false only when ctx ended before the job
// finished.
func (w *Worker) HandleTrain(ctx context.Context, payload []byte) bool {
	var m TrainMessage
	if err := json.Unmarshal(payload, &m); err != nil || !safeID(m.ModelID) || m.Attempt < 1 {
		w.log.Error("dropping malformed train message", "payload", truncate(string(payload), 300), "error", err)
		return true
	}
	log, tail := jobLogger(w.log, withRequestID(ctx, "job", "train", "model_id", m.ModelID, "attempt", m.Attempt)...)
	ctx, endJob := w.cfg.Observer.JobStarted(ctx, "train", requestid.From(ctx))
	outcome, jobErr := "failed", error(nil)
	defer func() { endJob(outcome, jobErr) }()
	claim, err := retry(ctx, 0, log, "claiming training", func(ctx context.Context) (*TrainingClaim, error) {
		return w.client.ClaimTraining(ctx, m.ModelID, m.Attempt)
	})
	if stop, ack := settleClaim(ctx, err, log, "training job", slog.LevelInfo, &outcome, &jobErr); stop {
		return ack
	}
	var finished bool
	outcome, jobErr, finished = w.runClaimed(ctx, log, tail, m, claim)
	return finished
}

// runClaimed trains a claimed attempt and reports it: success, failure
// (first line what happened, then the job's log), or — when ctx ends
// mid-job — a hand-back, so another worker trains it. finished is false
// only in that last case.
func (w *Worker) runClaimed(ctx context.Context, log *slog.Logger, tail *LogTail, m TrainMessage, claim *TrainingClaim) (outcome string, jobErr error, finished bool) {
	log.Info("claimed training job", "worker_id", w.client.WorkerID, "base_model", claim.BaseModel,
		"epochs", claim.Epochs, "dataset_key", claim.DatasetKey, "lease_seconds", claim.LeaseSeconds)

	jobCtx, cancelJob := context.WithCancelCause(ctx)
	defer cancelJob(nil)
	hb := startHeartbeats(jobCtx, w.client, m.ModelID, m.Attempt, claim.LeaseSeconds, w.cfg.HeartbeatMinInterval, log,
		func() { cancelJob(errLeaseLost) })
	defer hb.stop()

	report, err := w.train(jobCtx, log, m, claim, hb)
	if err == nil && jobCtx.Err() != nil {
		err = context.Cause(jobCtx)
	}
	switch {
	case err == nil:
		err = w.reportSuccess(jobCtx, log, m, report)
		if err == nil {
			log.Info("training succeeded", "artifact_key", claim.ArtifactKey)
			return "succeeded", nil, true
		}
		if errors.Is(err, ErrNotClaimable) || errors.Is(context.Cause(jobCtx), errLeaseLost) {
			log.Warn("the API refused the success report: the lease was lost", "error", err)
			return "lease_lost", nil, true
		}
		if ctx.Err() != nil {
			break
		}
		log.Error("the API rejected the success report", "error", err)
		w.reportFailure(ctx, log, m, "the API rejected the success report: "+err.Error(), tail)
		return "failed", err, true
	case errors.Is(context.Cause(jobCtx), errLeaseLost):
		log.Warn("lease lost: stopping the job without reporting")
		return "lease_lost", nil, true
	}
	if ctx.Err() != nil {
		log.Warn("worker shutting down: handing the training job back to the queue")
		hb.stop()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		reason := fmt.Sprintf("worker %s stopped (shutting down) during %s", w.client.WorkerID, hb.phase())
		if err := w.client.HandBack(rctx, m.ModelID, m.Attempt, reason); err != nil {
			log.Warn("could not hand the job back; the API requeues it when its lease expires", "error", err)
		} else {
			log.Info("training job handed back: the model is queued for the next free worker")
		}
		return "handed_back", err, false
	}
	// The job's log is the model's error, which its owner reads: the full
	// error (with the worker's paths) goes to the worker's own log only.
	public := w.pathFree(err)
	if public != err.Error() {
		w.log.Error("training failed", "model_id", m.ModelID, "attempt", m.Attempt, "error", err)
	}
	log.Error("training failed", "error", public)
	w.reportFailure(ctx, log, m, "training failed: "+public, tail)
	return "failed", err, true
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

func (w *Worker) reportSuccess(ctx context.Context, log *slog.Logger, m TrainMessage, s *Succeeded) error {
	_, err := retry(ctx, w.cfg.ReportRetryFor, log, "reporting success", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.client.TrainingSucceeded(ctx, m.ModelID, *s)
	})
	return err
}

// reportFailure reports a failed attempt: headline (what happened) on the
// first line, then the job's log from a line boundary, within the 2000
// characters a model's error keeps.
func (w *Worker) reportFailure(ctx context.Context, log *slog.Logger, m TrainMessage, headline string, tail *LogTail) {
	msg := FailureReport(headline, tail.String())
	_, err := retry(ctx, w.cfg.ReportRetryFor, log, "reporting failure", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.client.TrainingFailed(ctx, m.ModelID, m.Attempt, msg)
	})
	if err != nil {
		log.Error("could not report the failure; the lease will expire", "error", err)
	}
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
		tp := train.Pair{Chosen: p.Chosen, Rejected: p.Rejected, TraceIDs: p.TraceIDs, Granularity: p.Granularity}
		if p.ActionType != nil {
			tp.ActionType = *p.ActionType
		}
		o.Pairs[i] = tp
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
func (w *Worker) train(ctx context.Context, log *slog.Logger, m TrainMessage, claim *TrainingClaim, hb *heartbeats) (*Succeeded, error) {
	start := time.Now()
	dir := w.JobDir(m.ModelID, m.Attempt)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if !w.cfg.KeepJobDirs {
		defer func() {
			os.RemoveAll(dir)
			os.Remove(filepath.Dir(dir)) // the model's folder, when no other attempt is in it
		}()
	}
	hb.set(Progress{Phase: "training"})

	raw, err := w.cfg.Blobs.Get(ctx, claim.DatasetKey)
	if err != nil {
		return nil, fmt.Errorf("reading the dataset %s: %w", claim.DatasetKey, err)
	}
	var ds rewardmodels.Dataset
	if err := json.Unmarshal(raw, &ds); err != nil {
		return nil, fmt.Errorf("decoding the dataset %s: %w", claim.DatasetKey, err)
	}
	if ds.ModelID != "" && ds.ModelID != m.ModelID {
		return nil, fmt.Errorf("the dataset %s belongs to model %s, not %s", claim.DatasetKey, ds.ModelID, m.ModelID)
	}
	o := DatasetOptions(ds)
	o.OutDir, o.Epochs = dir, claim.Epochs
	if ds.MaxLength > 0 {
		o.MaxLen = ds.MaxLength // input version 3's window
	}
	log.Info("dataset loaded", "pairs", len(o.Pairs), "score_items", len(o.ScoreItems), "action_score_items", len(o.ActionScoreItems))
	if len(o.Pairs) < 2 { // before fetching the base model (spec 002)
		return nil, fmt.Errorf("%w, got %d", train.ErrTooFewPairs, len(o.Pairs))
	}
	log.Info("resolving base model", "base_model", claim.BaseModel)
	if o.BaseDir, err = w.hub.Resolve(ctx, claim.BaseModel, "main"); err != nil {
		return nil, fmt.Errorf("base model %s: %w", claim.BaseModel, err)
	}
	o.Progress = func(step, total int, loss, tps float64) {
		log.Info(fmt.Sprintf("step %d/%d loss %.4f tokens/s %.0f", step, total, loss, tps))
		w.cfg.Observer.TrainStep(tps)
		hb.set(Progress{Phase: "training", Step: step, TotalSteps: total, Loss: loss, TokensPerSec: tps})
		if step == total {
			log.Info("evaluating and scoring", "score_items", len(o.ScoreItems), "action_score_items", len(o.ActionScoreItems))
			hb.set(Progress{Phase: "scoring", Step: step, TotalSteps: total, Loss: loss})
		}
	}
	if w.cfg.TrainOptions != nil {
		w.cfg.TrainOptions(&o)
	}
	res, err := train.Train(ctx, o)
	if err != nil {
		return nil, err
	}
	met := res.Metrics
	log.Info("trained", "train_pairs", met.TrainPairs, "eval_pairs", met.EvalPairs, "final_loss", met.FinalLoss,
		"device", met.Device, "seconds", fmt.Sprintf("%.1f", met.Seconds))
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	hb.set(Progress{Phase: "uploading"})
	archive := filepath.Join(dir, ArchiveRoot+".tar.gz")
	if err := WriteArchive(res.ModelDir, archive); err != nil {
		return nil, err
	}
	if st, err := os.Stat(archive); err == nil {
		log.Info("uploading checkpoint", "artifact_key", claim.ArtifactKey, "bytes", st.Size())
	}
	if err := w.cfg.Blobs.PutFile(ctx, claim.ArtifactKey, archive); err != nil {
		return nil, fmt.Errorf("uploading the checkpoint to %s: %w", claim.ArtifactKey, err)
	}
	s := &Succeeded{AttemptRequest: jobs.AttemptRequest{Attempt: m.Attempt}, ScoresKey: jobs.ScoresKey(claim.OwnerID, m.ModelID, m.Attempt)}
	if err := w.cfg.Blobs.PutFile(ctx, s.ScoresKey, filepath.Join(dir, "scores.jsonl")); err != nil {
		return nil, fmt.Errorf("uploading scores: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "action_scores.jsonl")); err == nil {
		s.ActionScoresKey = jobs.ActionScoresKey(claim.OwnerID, m.ModelID, m.Attempt)
		if err := w.cfg.Blobs.PutFile(ctx, s.ActionScoresKey, filepath.Join(dir, "action_scores.jsonl")); err != nil {
			return nil, fmt.Errorf("uploading action scores: %w", err)
		}
	}
	if s.RewardStats, err = os.ReadFile(filepath.Join(res.ModelDir, "reward_stats.json")); err != nil {
		return nil, err
	}
	if data, err := os.ReadFile(filepath.Join(res.ModelDir, "action_reward_stats.json")); err == nil {
		s.ActionRewardStats = data
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	met.Seconds = time.Since(start).Seconds() // spec 002: including scoring and upload
	if s.Metrics, err = json.Marshal(met); err != nil {
		return nil, fmt.Errorf("encoding the metrics: %w", err)
	}
	return s, ctx.Err()
}

// HandleScore runs one critic.jobs.score message; it returns false only when ctx
// ended before the job finished.
func (w *Worker) HandleScore(ctx context.Context, payload []byte) bool {
	var m ScoreMessage
	if err := json.Unmarshal(payload, &m); err != nil || m.RunID == "" || m.TraceID == "" || m.ModelID == "" {
		w.log.Error("dropping malformed score message", "payload", truncate(string(payload), 300), "error", err)
		return true
	}
	log, _ := jobLogger(w.log, withRequestID(ctx, "job", "score", "run_id", m.RunID, "trace_id", m.TraceID, "model_id", m.ModelID)...)
	ctx, endJob := w.cfg.Observer.JobStarted(ctx, "score", requestid.From(ctx))
	outcome, jobErr := "failed", error(nil)
	defer func() { endJob(outcome, jobErr) }()
	claim, err := retry(ctx, 0, log, "claiming scoring", func(ctx context.Context) (*ScoringClaim, error) {
		return w.client.ClaimScoring(ctx, m.RunID, m.TraceID, m.ModelID)
	})
	if stop, ack := settleClaim(ctx, err, log, "scoring job", slog.LevelInfo, &outcome, &jobErr); stop {
		return ack
	}
	log.Info("claimed scoring job", "items_key", claim.ItemsKey)
	scoreStart := time.Now()
	scores, err := w.score(ctx, log, claim.ItemsKey)
	if err == nil {
		outcome = "succeeded"
		w.cfg.Observer.Scored(len(scores), time.Since(scoreStart))
	} else {
		jobErr = err
	}
	f := ScoringFinished{ScoringRequest: jobs.ScoringRequest{TraceID: m.TraceID, ModelID: m.ModelID}, ActionScores: scores}
	rctx := ctx
	if err != nil {
		if ctx.Err() != nil {
			// Stopping: hand the run back; the next free worker scores it.
			outcome = "interrupted"
			w.handBack(ctx, log, "scoring run", "it fails once it has run too long", func(ctx context.Context, reason string) error {
				return w.client.ScoringHandBack(ctx, m.RunID, m.TraceID, m.ModelID, reason)
			})
			return false
		}
		log.Error("scoring failed", "error", err)
		f.ActionScores, f.Error = nil, truncate(err.Error(), ErrorTailChars)
	} else {
		log.Info("scored", "actions", len(scores))
	}
	_, err = retry(rctx, w.cfg.ReportRetryFor, log, "reporting scores", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.client.ScoringFinished(ctx, m.RunID, f)
	})
	switch {
	case errors.Is(err, ErrNotClaimable):
		outcome, jobErr = "lease_lost", err
		log.Warn("the API refused the scoring report (not claimable)", "error", err)
	case err != nil:
		outcome, jobErr = "failed", err
		log.Error("could not report the scoring result", "error", err)
	}
	return ctx.Err() == nil
}

func (w *Worker) score(ctx context.Context, log *slog.Logger, itemsKey string) ([]ActionScore, error) {
	raw, err := w.cfg.Blobs.Get(ctx, itemsKey)
	if err != nil {
		return nil, fmt.Errorf("reading the scoring items %s: %w", itemsKey, err)
	}
	var items jobs.ScoringItems
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("decoding the scoring items %s: %w", itemsKey, err)
	}
	if items.ArtifactKey == "" {
		return nil, fmt.Errorf("the scoring items %s name no artifact_key", itemsKey)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rm, err := w.rewardModel(ctx, log, items.ArtifactKey)
	if err != nil {
		return nil, err
	}
	if rm.ActionStats == nil {
		return nil, errors.New("the model has no action_reward_stats.json: it was not trained on action comparisons; " +
			"train a new model with ratings on assistant responses or tool calls")
	}
	texts := make([]string, len(items.ActionScoreItems))
	for i, it := range items.ActionScoreItems {
		texts[i] = it.Text
	}
	rm.MaxLen = model.DefaultMaxLen
	if items.MaxLength > 0 {
		rm.MaxLen = items.MaxLength
	}
	rs, err := rm.Score(texts)
	if err != nil {
		return nil, err
	}
	out := make([]ActionScore, len(rs))
	for i, it := range items.ActionScoreItems {
		if math.IsNaN(rs[i]) || math.IsInf(rs[i], 0) {
			return nil, fmt.Errorf("step %s: the model produced a non-finite score", it.StepID)
		}
		out[i] = ActionScore{TraceID: it.TraceID, StepID: it.StepID, Score: rs[i], Credit: rm.ActionStats.Credit(rs[i])}
	}
	return out, ctx.Err()
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
	rm, err := model.LoadRewardModel(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the checkpoint %s: %w", key, err)
	}
	if w.loaded != nil {
		w.loaded.rm.Model.Finalize()
	}
	w.loaded = &loadedModel{key: key, rm: rm}
	return rm, nil
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
	log.Info("downloading checkpoint", "artifact_key", key)
	archive := filepath.Join(tmp, "archive.tar.gz")
	if err := w.cfg.Blobs.GetToFile(ctx, key, archive); err != nil {
		return "", fmt.Errorf("downloading the checkpoint %s: %w", key, err)
	}
	extracted := filepath.Join(tmp, "x")
	if _, err := ExtractArchive(archive, extracted); err != nil {
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

// heartbeats renews a training lease every period and sends progress as it
// changes, at most once per minGap. A 409 calls lost (the job must stop).
type heartbeats struct {
	mu     sync.Mutex
	p      Progress
	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func startHeartbeats(ctx context.Context, c *Client, modelID string, attempt, leaseSeconds int, minGap time.Duration,
	log *slog.Logger, lost func()) *heartbeats {
	if leaseSeconds <= 0 {
		leaseSeconds = 60
	}
	period := max(time.Duration(leaseSeconds)*time.Second/3, time.Second)
	ctx, cancel := context.WithCancel(ctx)
	h := &heartbeats{kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		timer := time.NewTimer(period)
		defer timer.Stop()
		var last time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			case <-h.kick:
				if wait := minGap - time.Since(last); wait > 0 && !sleep(ctx, wait) {
					return
				}
			}
			h.mu.Lock()
			p := h.p
			h.mu.Unlock()
			cctx, ccancel := context.WithTimeout(ctx, max(period, 10*time.Second))
			err := c.Heartbeat(cctx, modelID, attempt, p)
			ccancel()
			last = time.Now()
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(period)
			switch {
			case err == nil:
			case errors.Is(err, ErrNotClaimable):
				log.Warn("heartbeat refused: the lease is lost", "error", err)
				lost()
				return
			case ctx.Err() != nil:
				return
			default:
				log.Warn("heartbeat failed; retrying", "error", err)
			}
		}
	}()
	return h
}

// phase is the last phase reported ("training" before any), for messages.
func (h *heartbeats) phase() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.p.Phase == "" {
		return "training"
	}
	if h.p.TotalSteps > 0 {
		return fmt.Sprintf("%s (step %d/%d)", h.p.Phase, h.p.Step, h.p.TotalSteps)
	}
	return h.p.Phase
}

func (h *heartbeats) set(p Progress) {
	h.mu.Lock()
	h.p = p
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

func (h *heartbeats) stop() {
	h.once.Do(func() {
		h.cancel()
		<-h.done
	})
}

// retry calls fn until it succeeds, fails for good (not Transient), ctx ends or,
// when limit > 0, limit has passed.
func retry[T any](ctx context.Context, limit time.Duration, log *slog.Logger, what string, fn func(context.Context) (T, error)) (T, error) {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		v, err := fn(ctx)
		if err == nil || !Transient(err) || ctx.Err() != nil || (limit > 0 && time.Since(start) > limit) {
			return v, err
		}
		log.Warn(what+" failed; retrying", "error", err, "attempt", attempt)
		if !sleep(ctx, backoff(attempt, 30*time.Second)) {
			return v, err
		}
	}
}

func backoff(attempt int, ceiling time.Duration) time.Duration {
	d := 500 * time.Millisecond
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// safeID accepts ids that are safe as one path segment and blob-key segment.
func safeID(id string) bool {
	return id != "" && len(id) <= 200 && !strings.ContainsAny(id, `/\`) && !strings.HasPrefix(id, ".") &&
		blob.ValidateKey(id) == nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// settleClaim ends a job whose claim did not succeed, the same way for every
// job kind. ctx ended: "interrupted", and the message stays unacknowledged.
// Not claimable (a duplicate or stale delivery): "refused" and acknowledged,
// logged at quiet. Any other refusal: "refused", logged as an error and
// kept as the job's error. It reports whether the handler stops and, when it
// does, what it returns.
func settleClaim(ctx context.Context, err error, log *slog.Logger, job string, quiet slog.Level, outcome *string, jobErr *error) (stop, ack bool) {
	switch {
	case ctx.Err() != nil:
		*outcome = "interrupted"
		return true, false
	case errors.Is(err, ErrNotClaimable):
		*outcome = "refused"
		log.Log(ctx, quiet, "skipping "+job+": not claimable (a duplicate or stale delivery)", "detail", err.Error())
		return true, true
	case err != nil:
		*outcome, *jobErr = "refused", err
		log.Error("skipping "+job+": claim refused", "error", err)
		return true, true
	}
	return false, false
}
