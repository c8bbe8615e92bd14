package usecase

import (
	"context"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/projections/readmodel"
)

// GepaRequest is POST /gepa-runs as a client sent it (nil = absent).
type GepaRequest struct {
	RewardModelID   *string
	TaskModel       *string
	TaskAPIBase     *string
	TaskAPIKey      *string
	ReflectionModel *string
	MaxMetricCalls  *int
}

// CreateGepaRun queues a GEPA run on one of the caller's succeeded models
// and returns it as the read model shows it (queued).
func (b Backend) CreateGepaRun(ctx context.Context, caller *readmodel.Caller, req GepaRequest) (*readmodel.GepaRun, error) {
	if req.RewardModelID == nil || *req.RewardModelID == "" {
		return nil, domain.InvalidField("reward_model_id", "reward_model_id is required")
	}
	res, err := b.Cmds.RequestGepaRun.Handle(ctx, commands.RequestGepaRun{Actor: Actor(caller), Input: commands.RequestGepa{ModelID: *req.RewardModelID, TaskModel: req.TaskModel,
		TaskAPIBase: req.TaskAPIBase, TaskAPIKey: req.TaskAPIKey, ReflectionModel: req.ReflectionModel, MaxMetricCalls: req.MaxMetricCalls}})
	return settled(ctx, b, res.Result, err, func() (*readmodel.GepaRun, error) { return b.Queries.GetGepaRun(ctx, caller.UserID, res.RunID) })
}

// GepaSkill is the best skill of one of the caller's succeeded runs; not
// found until the run succeeds.
func (b Backend) GepaSkill(ctx context.Context, caller *readmodel.Caller, id string) (string, error) {
	run, err := b.Queries.GetGepaRun(ctx, caller.UserID, id)
	if err != nil {
		return "", err
	}
	if run.Status != "succeeded" || run.BestSkill == nil {
		return "", &domain.NotFoundError{What: "skill of GEPA run " + id + " (the run has not succeeded; status " + run.Status + ")"}
	}
	return *run.BestSkill, nil
}
