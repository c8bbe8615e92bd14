package connectapi

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/projections/readmodel"
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
	return connect.NewResponse(&criticv1.CreateGepaRunResponse{GepaRun: gepaRunToProto(run)}), nil
}

// ListGepaRuns lists the caller's runs, newest first.
func (s *GepaService) ListGepaRuns(ctx context.Context, _ *connect.Request[criticv1.ListGepaRunsRequest]) (*connect.Response[criticv1.ListGepaRunsResponse], error) {
	runs, err := s.d.Queries.ListGepaRuns(ctx, edge.CallerFrom(ctx).UserID)
	if err != nil {
		return nil, err
	}
	out := &criticv1.ListGepaRunsResponse{GepaRuns: make([]*criticv1.GepaRun, len(runs))}
	for i := range runs {
		out.GepaRuns[i] = gepaRunToProto(&runs[i])
	}
	return connect.NewResponse(out), nil
}

// GetGepaRun returns one of the caller's runs.
func (s *GepaService) GetGepaRun(ctx context.Context, req *connect.Request[criticv1.GetGepaRunRequest]) (*connect.Response[criticv1.GetGepaRunResponse], error) {
	run, err := s.d.Queries.GetGepaRun(ctx, edge.CallerFrom(ctx).UserID, req.Msg.GepaRunId)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.GetGepaRunResponse{GepaRun: gepaRunToProto(run)}), nil
}

// GetGepaSkill returns the best skill of a succeeded run.
func (s *GepaService) GetGepaSkill(ctx context.Context, req *connect.Request[criticv1.GetGepaSkillRequest]) (*connect.Response[criticv1.GetGepaSkillResponse], error) {
	skill, err := s.d.backend().GepaSkill(ctx, edge.CallerFrom(ctx), req.Msg.GepaRunId)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.GetGepaSkillResponse{SkillMd: skill}), nil
}

func gepaRunToProto(r *readmodel.GepaRun) *criticv1.GepaRun {
	out := &criticv1.GepaRun{Id: r.ID, RewardModelId: r.RewardModelID, Status: r.Status, TaskModel: r.TaskModel, TaskApiBase: r.TaskAPIBase,
		ReflectionModel: r.ReflectionModel, MaxMetricCalls: int32(r.MaxMetricCalls), Examples: int32(r.Examples),
		SkillName: r.SkillName, SkillDescription: r.SkillDescription, BestSkill: r.BestSkill, BestScore: r.BestScore,
		SeedSkill: r.SeedSkill, SeedScore: r.SeedScore, Error: r.Error, CreatedAt: timestamppb.New(r.CreatedAt),
		StartedAt: timestampOrNil(r.StartedAt), FinishedAt: timestampOrNil(r.FinishedAt)}
	if r.MetricCalls != nil {
		n := int32(*r.MetricCalls)
		out.MetricCalls = &n
	}
	if p := r.Progress; p != nil {
		out.Progress = &criticv1.GepaProgress{Iteration: int32(p.Iteration), MetricCalls: int32(p.MetricCalls), MaxMetricCalls: int32(p.MaxMetricCalls), BestScore: p.BestScore}
	}
	for _, c := range r.Candidates {
		out.Candidates = append(out.Candidates, &criticv1.GepaCandidate{Skill: c.Skill, Score: c.Score})
	}
	if h := r.Holdout; h != nil {
		out.Holdout = &criticv1.GepaHoldout{Examples: int32(h.Examples), SeedScore: h.SeedScore, BestScore: h.BestScore}
	}
	return out
}
