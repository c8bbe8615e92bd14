package connectapi

import (
	"context"

	"connectrpc.com/connect"

	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// GepaService implements critic.v1.GepaService over the use cases REST's
// /gepa-runs routes call, so both answer the same data and errors.
type GepaService struct{ d Deps }

// CreateGepaRun queues a run.
func (s *GepaService) CreateGepaRun(ctx context.Context, req *connect.Request[criticv1.CreateGepaRunRequest]) (*connect.Response[criticv1.CreateGepaRunResponse], error) {
	caller := edge.CallerFrom(ctx)
	m := req.Msg
	run, err := s.d.backend().CreateGepaRun(ctx, caller, usecase.GepaRequest{RewardModelID: nonEmpty(m.RewardModelId), TaskModel: m.TaskModel,
		TaskAPIBase: m.TaskApiBase, TaskAPIKey: m.TaskApiKey, ReflectionModel: m.ReflectionModel, MaxMetricCalls: intPtr(m.MaxMetricCalls)})
	if err != nil {
		return nil, err
	}
	out, err := shape[*criticv1.GepaRun](run)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.CreateGepaRunResponse{GepaRun: out}), nil
}

// ListGepaRuns lists the caller's runs, newest first.
func (s *GepaService) ListGepaRuns(ctx context.Context, _ *connect.Request[criticv1.ListGepaRunsRequest]) (*connect.Response[criticv1.ListGepaRunsResponse], error) {
	runs, err := s.d.Queries.ListGepaRuns(ctx, edge.CallerFrom(ctx).UserID)
	if err != nil {
		return nil, err
	}
	list, err := shapes[*criticv1.GepaRun](runs)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.ListGepaRunsResponse{GepaRuns: list}), nil
}

// GetGepaRun returns one of the caller's runs.
func (s *GepaService) GetGepaRun(ctx context.Context, req *connect.Request[criticv1.GetGepaRunRequest]) (*connect.Response[criticv1.GetGepaRunResponse], error) {
	run, err := s.d.Queries.GetGepaRun(ctx, edge.CallerFrom(ctx).UserID, req.Msg.GepaRunId)
	if err != nil {
		return nil, err
	}
	out, err := shape[*criticv1.GepaRun](run)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.GetGepaRunResponse{GepaRun: out}), nil
}

// GetGepaSkill returns the best skill of a succeeded run.
func (s *GepaService) GetGepaSkill(ctx context.Context, req *connect.Request[criticv1.GetGepaSkillRequest]) (*connect.Response[criticv1.GetGepaSkillResponse], error) {
	skill, err := s.d.backend().GepaSkill(ctx, edge.CallerFrom(ctx), req.Msg.GepaRunId)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.GetGepaSkillResponse{SkillMd: skill}), nil
}
