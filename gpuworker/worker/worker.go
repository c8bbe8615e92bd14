// Package worker is the gpuworker's job loop (DESIGN §8): it consumes the job
// topics of domain/jobs from Kafka as a member of the "workers" consumer
// group (consume.go), claims each job through the API's worker service (so
// a duplicate or stale delivery is answered 409 and skipped), runs it, and
// reports the result through the same service. Workers hold a worker
// token, the Kafka address and blob-store access, never database
// credentials.
//
// Every kind of job runs through one typed runner (runner.go), in the
// manner of river: a kind is a Kind[Msg, Args, Result] whose Work(ctx,
// *Job[Args]) (Result, error) is all it writes — one file per kind
// (training.go, scoring.go, extract.go, title.go, label.go, assess.go,
// gepa.go, evaluator.go). The runner owns the claim (retried while the API
// is unreachable), the job's logger and metrics, the lease's heartbeats,
// the result or failure report, the hand-back of a stopping worker, and a
// lost lease.
//
// A job's Kafka offset is committed only after the job finished — succeeded,
// or its failure was reported — or, for a long job that released its
// topic's partitions (releasesWhileBusy), by whichever worker gets its
// redelivery and is refused by the claim. A worker that dies mid-job
// leaves the message uncommitted; the API expires the lease, and a
// redelivery is refused by the claim.
package worker

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/gpuworker/grade"
	"github.com/criticml/critic/gpuworker/hub"
	"github.com/criticml/critic/gpuworker/label"
	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/train"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/llm"
)

// DefaultLabelJobs is Config.LabelJobs's default.
const DefaultLabelJobs = 4

// DefaultShortJobs is Config.ShortJobs's default.
const DefaultShortJobs = 2

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
	// candidate) runs before its consumer gives the topic's partitions up
	// if another worker consumes the topic (default 2 s; asked again this
	// often while the job runs), so the jobs queued behind it go to that
	// worker; the consumer rejoins when the job ends.
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
	cfg.Log = cmp.Or(cfg.Log, slog.Default())
	cfg.ConsumerGroup = cmp.Or(cfg.ConsumerGroup, jobs.ConsumerGroup)
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
	cfg.Compute = cmp.Or(cfg.Compute, rewardmodels.ComputeWorker)
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

// Close frees the cached scoring model.
func (w *Worker) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.loaded != nil {
		w.loaded.rm.Model.Finalize()
		w.loaded = nil
	}
}
