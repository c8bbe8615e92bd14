// Package commands holds one file per command: the command (a struct of
// what the caller asks), its handler (a struct holding what the command
// needs) and the handler's Handle. Each validates its input, loads the
// streams it decides on from the event store, asks the domain what events
// follow, and appends them with the streams' expected versions. Commands
// never write anywhere else: read models follow from the events.
package commands

import (
	"cmp"
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/requestid"
)

// Streams is the event log as the command side reads and writes it: the
// store and the loaders, folds, appends, sealing and erasure every handler
// shares. Its exported methods are the
// reads of those folds that are not commands — a model's or the
// evaluator's state, the audits' checks, what a worker's claim answers —
// for the callers that need the log's own answer rather than the read
// model's.
type Streams struct {
	store *eventstore.Store
	// sealKey seals tenant-supplied keys (WithSecret); nil refuses them.
	sealKey []byte
	// locks serializes this process's writers of one trace (live OTLP).
	locks streamLocks
	// live keeps the conversations live OTLP wrote lately, folded.
	live liveConversations
	// erased counts erased traces by kind (WithErasureCounter); nil: none.
	erased func(kind string)
}

// WithStepLabelModel says the deployment labels steps with model (a LiteLLM
// model string); unavailable, when model is "", says why not. Retrying a
// trace's labeling needs it.
func WithStepLabelModel(model, unavailable string) Option {
	return func(c *config) { c.stepLabels = stepLabelPlan{model: model, unavailable: unavailable} }
}

// Option configures Commands.
type Option func(*config)

// config is what the options set: the deployment's choices that a few
// handlers decide with (each handler holds the ones it needs) and what
// Streams shares.
type config struct {
	// feedback is what new and retried models record as their feedback
	// plan: the deployment's classifier model, or why there is none.
	feedback events.FeedbackPlan
	// stepLabels is the deployment's step-label model, or why there is none.
	stepLabels stepLabelPlan
	// compute is the compute a new request records (WithCompute).
	compute string
	// otlpCache bounds what live OTLP keeps between exports (WithOTLPCache).
	otlpCache int64
	// modelRoots are the directories a local base_model may lie in
	// (WithModelRoots); none means hub ids only.
	modelRoots []string
	sealKey    []byte
	erased     func(kind string)
}

// WithModelRoots says where a tenant's local base_model may lie: the data
// directory's models folder (the base models this deployment created or
// downloaded) and CRITIC_MODEL_ROOTS, all absolute. Anything else — /etc,
// another owner's checkpoint cache — is refused at request time.
func WithModelRoots(roots ...string) Option {
	return func(c *config) { c.modelRoots = append(c.modelRoots, roots...) }
}

// WithFeedbackModel says the deployment extracts feedback with model (a
// LiteLLM model string); unavailable, when model is "", says why not and
// which variable to set. Without this option models train on explicit
// ratings only.
func WithFeedbackModel(model, unavailable string) Option {
	return func(c *config) { c.feedback = events.FeedbackPlan{Model: model, Unavailable: unavailable} }
}

// WithCompute says where this deployment's models train until a worker
// claims them (the request's compute): rewardmodels.ComputeLocal for `critic
// run` (its in-process worker), rewardmodels.ComputeWorker for `critic
// serve` (remote workers). The claim then records where the claiming worker
// really runs. Default: local.
func WithCompute(compute string) Option {
	return func(c *config) { c.compute = compute }
}

// New returns the command side over an event store: one handler per
// command, each over the same Streams.
func New(store *eventstore.Store, opts ...Option) *Commands {
	cfg := config{compute: rewardmodels.Compute, otlpCache: DefaultOTLPCache}
	for _, o := range opts {
		o(&cfg)
	}
	return newCommands(&Streams{store: store, sealKey: cfg.sealKey, erased: cfg.erased, live: liveConversations{budget: cfg.otlpCache}}, cfg)
}

// feedbackPlan is the plan recorded for an attempt with the given config
// in a deployment whose feedback model is deployed.
func feedbackPlan(deployed events.FeedbackPlan, cfg events.TrainingConfig) *events.FeedbackPlan {
	if cfg.AnnotationSource != events.SourceFeedback {
		return nil
	}
	p := deployed
	if p.Model == "" && p.Unavailable == "" {
		p.Unavailable = "no feedback model is configured for this deployment (set CRITIC_FEEDBACK_MODEL and its provider's API key)"
	}
	return &p
}

// Actor is who issues a command: a user (by id), a worker, or the system.
type Actor struct {
	UserID string
	// MemberID is the account's member acting (issue 36); "" is the
	// account's implicit admin, whose member id is the account's.
	MemberID string
	// Moderates: the actor may change or remove other members'
	// annotations (an admin); anyone else changes only their own.
	Moderates bool
	worker    string
}

// Member is the acting member's id: what an annotation records as its
// author.
func (a Actor) Member() string {
	if a.MemberID != "" {
		return a.MemberID
	}
	return a.UserID
}

func (a Actor) String() string {
	switch {
	case a.worker != "":
		return "worker:" + a.worker
	case a.UserID == "":
		return "system"
	}
	return "user:" + a.UserID
}

// Result says what a command appended; LastEventID is what a handler waits
// for to give read-your-writes ("" when the command was a no-op).
type Result struct {
	LastEventID string
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// append stores evs, tagging them with the actor, a fresh causation id (this
// command) and the correlation id of the request that issued it: the request
// id ctx carries (an API request, or the job or event a worker or projection
// acts on), else the command's own id.
func (c *Streams) append(ctx context.Context, actor Actor, expected map[string]int64, evs []events.New) (Result, error) {
	if len(evs) == 0 {
		return Result{}, nil
	}
	cause := newID()
	corr := cmp.Or(requestid.From(ctx), cause)
	envs, err := c.store.Append(ctx, eventstore.Meta{Actor: actor.String(), CausationID: cause, CorrelationID: corr}, expected, evs)
	if err != nil {
		return Result{}, err
	}
	return Result{LastEventID: envs[len(envs)-1].ID}, nil
}

// appendEvent appends one event of ownerID to stream, expecting the stream
// at version (0: it must not exist yet).
func (c *Streams) appendEvent(ctx context.Context, actor Actor, stream, ownerID string, version int64, typ string, payload any) (Result, error) {
	return c.append(ctx, actor, map[string]int64{stream: version}, []events.New{{ID: newID(), Stream: stream, OwnerID: ownerID, Type: typ, Payload: payload}})
}

// loadStream reads one stream, oldest first (nil when it has no events).
func (c *Streams) loadStream(ctx context.Context, stream string) ([]events.Envelope, error) {
	loaded, err := c.store.LoadStreams(ctx, []string{stream})
	return loaded[stream], err
}

// retryOnConflict reruns a load-decide-append cycle when another writer moved
// a stream in between; after three tries the conflict reaches the caller.
func retryOnConflict(fn func() (Result, error)) (Result, error) {
	var err error
	for range 3 {
		var r Result
		r, err = fn()
		if _, ok := errors.AsType[*domain.VersionConflictError](err); !ok {
			return r, err
		}
	}
	return Result{}, &domain.ConflictError{Code: "concurrent_write", Message: "another write changed the same data; retry"}
}
