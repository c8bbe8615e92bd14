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
type GepaService struct{ d edge.Deps }

// CreateGepaRun queues a run.
func (s *GepaService) CreateGepaRun(ctx context.Context, req *connect.Request[criticv1.CreateGepaRunRequest]) (*connect.Response[criticv1.CreateGepaRunResponse], error) {
	m := req.Msg
	run, err := shaped[*criticv1.GepaRun](s.d.Backend().CreateGepaRun(ctx, edge.CallerFrom(ctx), usecase.GepaRequest{RewardModelID: usecase.NonEmpty(m.RewardModelId), TaskModel: m.TaskModel,
		TaskAPIBase: m.TaskApiBase, TaskAPIKey: m.TaskApiKey, ReflectionModel: m.ReflectionModel, MaxMetricCalls: intPtr(m.MaxMetricCalls)}))
	return reply(&criticv1.CreateGepaRunResponse{GepaRun: run}, err)
}

// ListGepaRuns lists the caller's runs, newest first.
func (s *GepaService) ListGepaRuns(ctx context.Context, _ *connect.Request[criticv1.ListGepaRunsRequest]) (*connect.Response[criticv1.ListGepaRunsResponse], error) {
	list, err := shapedList[*criticv1.GepaRun](s.d.Queries.ListGepaRuns(ctx, edge.CallerFrom(ctx).UserID))
	return reply(&criticv1.ListGepaRunsResponse{GepaRuns: list}, err)
}

// GetGepaRun returns one of the caller's runs.
func (s *GepaService) GetGepaRun(ctx context.Context, req *connect.Request[criticv1.GetGepaRunRequest]) (*connect.Response[criticv1.GetGepaRunResponse], error) {
	run, err := shaped[*criticv1.GepaRun](s.d.Queries.GetGepaRun(ctx, edge.CallerFrom(ctx).UserID, req.Msg.GepaRunId))
	return reply(&criticv1.GetGepaRunResponse{GepaRun: run}, err)
}

// GetGepaSkill returns the best skill of a succeeded run.
func (s *GepaService) GetGepaSkill(ctx context.Context, req *connect.Request[criticv1.GetGepaSkillRequest]) (*connect.Response[criticv1.GetGepaSkillResponse], error) {
	skill, err := s.d.Backend().GepaSkill(ctx, edge.CallerFrom(ctx), req.Msg.GepaRunId)
	return reply(&criticv1.GetGepaSkillResponse{SkillMd: skill}, err)
}
