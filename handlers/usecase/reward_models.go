package usecase

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/projections/readmodel"
)

// WeightsURLTTL is how long a weights download link works (spec 002).
const WeightsURLTTL = 5 * time.Minute

// TrainingRequest is a reward-model request as a client sent it, before
// checks and defaults (nil = absent).
type TrainingRequest struct {
	Name      *string
	TraceIDs  []string
	BaseModel *string
	Epochs    *int
	MaxPairs  *int
	// TrainingConfig is training_config (nil = absent).
	TrainingConfig *commands.TrainingConfig
}

// CreateRewardModel queues a reward model and returns it as its request
// event left it (queued). The deployment chooses compute. When the request
// is stored but the read model lags (e.g. the broker is down), it still
// answers from the events rather than with an error: the model trains once
// the events flow.
func (b Backend) CreateRewardModel(ctx context.Context, caller *readmodel.Caller, req TrainingRequest) (*readmodel.RewardModel, error) {
	if req.Name == nil {
		return nil, domain.InvalidField("name", "name is required")
	}
	in := commands.RequestTrainingInput{Name: *req.Name, TraceIDs: req.TraceIDs, BaseModel: domain.OrEmpty(req.BaseModel), Config: req.TrainingConfig}
	if req.Epochs != nil {
		if *req.Epochs < 1 {
			return nil, domain.InvalidField("epochs", "epochs must be 1–100")
		}
		in.Epochs = *req.Epochs
	}
	if req.MaxPairs != nil {
		if *req.MaxPairs < 1 {
			return nil, domain.InvalidField("max_pairs", "max_pairs must be 1–1000000")
		}
		in.MaxPairs = *req.MaxPairs
	}
	res, err := b.Cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: Actor(caller), Input: in})
	if err != nil {
		return nil, err
	}
	return b.modelAfter(ctx, caller, res.Result, res.ModelID)
}

// RetryRewardModel re-queues one of the caller's failed models and returns
// it as the retry left it; a model that did not fail is a conflict (REST
// 409).
func (b Backend) RetryRewardModel(ctx context.Context, caller *readmodel.Caller, id string) (*readmodel.RewardModel, error) {
	res, err := b.Cmds.RetryTraining.Handle(ctx, commands.RetryTraining{Actor: Actor(caller), ModelID: id})
	if err != nil {
		return nil, err
	}
	return b.modelAfter(ctx, caller, res, id)
}

// modelAfter answers a write that queued the model (a request or a retry)
// with the model as that write left it: queued, before any dataset. Once the
// read model has applied the write (the bounded wait) it answers from the
// read model's row, the one GET shows. Only when that row is not the
// write's state does it fold the model's stream through the write's last
// event (readmodel.ModelAsOf): a read model that lags past the wait (the
// stored write still answers, created_at the request event's time, not the
// clock) or one a fast worker already moved on (its dataset, claim or
// result is the next GET's, not this answer's: spec 001 answers queued).
func (b Backend) modelAfter(ctx context.Context, caller *readmodel.Caller, res commands.Result, id string) (*readmodel.RewardModel, error) {
	var lag *domain.UnavailableError
	err := b.Settle(ctx, res)
	if err != nil && !errors.As(err, &lag) {
		return nil, err
	}
	if err == nil {
		m, err := b.Queries.RewardModel(ctx, caller.UserID, id)
		if err != nil {
			return nil, err
		}
		if justQueued(m) {
			return &m, nil
		}
	}
	evs, err := b.Cmds.Streams.ModelEvents(ctx, caller.UserID, id)
	if err != nil {
		return nil, err
	}
	m, ok := readmodel.ModelAsOf(evs, res.LastEventID)
	if !ok {
		return nil, fmt.Errorf("usecase: reward model %s has no request event", id)
	}
	return &m, nil
}

// justQueued reports whether m is the state a request or a retry leaves
// (rewardmodels.State.Queue): queued with no dataset (num_pairs), no
// extraction progress and no worker yet. A later event either changes one
// of these (a requeue keeps the dataset's num_pairs) or nothing a
// RewardModel shows, so such a row is the write's answer.
func justQueued(m readmodel.RewardModel) bool {
	return m.Status == rewardmodels.StatusQueued && m.NumPairs == nil && m.WorkerID == nil && m.StartedAt == nil &&
		(len(m.Progress) == 0 || string(m.Progress) == "null")
}

// WeightsURL signs a WeightsURLTTL download link of the model's checkpoint,
// which needs no API key; not found unless the caller owns the model and it
// succeeded.
func (b Backend) WeightsURL(ctx context.Context, blobs blob.Store, caller *readmodel.Caller, id string) (string, error) {
	key, err := b.Queries.ArtifactKey(ctx, caller.UserID, id)
	if err != nil {
		return "", err
	}
	if blobs == nil {
		return "", errors.New("handlers: no blob store to sign weights downloads")
	}
	return blobs.SignedURL(ctx, key, WeightsURLTTL)
}

// ScoreTrace asks for one of the caller's traces to be scored by one of the
// caller's models (modelID nil = absent) and returns the scoring run
// answering the request: new, active, or already completed for this
// revision of the trace.
func (b Backend) ScoreTrace(ctx context.Context, caller *readmodel.Caller, traceID string, modelID *string) (*readmodel.ScoringRun, error) {
	if modelID == nil {
		return nil, domain.InvalidField("reward_model_id", "reward_model_id is required")
	}
	res, err := b.Cmds.RequestScoring.Handle(ctx, commands.RequestScoring{Actor: Actor(caller), TraceID: traceID, ModelID: *modelID})
	return settled(ctx, b, res.Result, err, func() (*readmodel.ScoringRun, error) { return b.Queries.GetScoringRun(ctx, caller.UserID, res.RunID) })
}

// SetBackgroundScoring pauses or resumes background scoring of one of the
// caller's ready models (spec 001 "Learned action credit") and answers the
// model's background_scoring once the read model applied the change: 404
// for a model that is not the caller's, 409 model_not_ready before it
// succeeded.
func (b Backend) SetBackgroundScoring(ctx context.Context, caller *readmodel.Caller, id string, paused bool) (readmodel.BackgroundScoring, error) {
	res, err := b.Cmds.SetBackgroundScoring.Handle(ctx, commands.SetBackgroundScoring{Actor: Actor(caller), ModelID: id, Paused: paused})
	return settled(ctx, b, res, err, func() (readmodel.BackgroundScoring, error) {
		bg, err := b.Queries.BackgroundScoringOf(ctx, caller.UserID, id)
		bg.Paused = paused // what the write decided, even if a later one landed first
		return bg, err
	})
}
