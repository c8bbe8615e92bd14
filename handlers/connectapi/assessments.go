package connectapi

import (
	"context"

	"connectrpc.com/connect"

	"github.com/criticml/critic/domain/sections"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// SummarizeSections is REST's POST /traces/{id}/section-summaries; like it,
// it needs write access (it records events and spends provider budget).
func (s *TraceService) SummarizeSections(ctx context.Context, req *connect.Request[criticv1.SummarizeSectionsRequest]) (*connect.Response[criticv1.SummarizeSectionsResponse], error) {
	ranges := make([]sections.Range, len(req.Msg.Ranges))
	for i, r := range req.Msg.Ranges {
		ranges[i] = sections.Range{FirstStepID: r.FirstStepId, LastStepID: r.LastStepId}
	}
	res, err := usecase.AssessSections(ctx, s.d.Queries, s.d.Assessments, edge.CallerFrom(ctx).UserID, req.Msg.TraceId, ranges)
	return reply(shaped[*criticv1.SummarizeSectionsResponse](res, err))
}

// EstimateCompletion is REST's POST /traces/{id}/completion (write access).
func (s *TraceService) EstimateCompletion(ctx context.Context, req *connect.Request[criticv1.EstimateCompletionRequest]) (*connect.Response[criticv1.EstimateCompletionResponse], error) {
	res, err := usecase.EstimateCompletion(ctx, s.d.Queries, s.d.Assessments, edge.CallerFrom(ctx).UserID, req.Msg.TraceId)
	return reply(shaped[*criticv1.EstimateCompletionResponse](res, err))
}

// RetryLabeling is REST's POST /traces/{id}/labeling/retry.
func (s *TraceService) RetryLabeling(ctx context.Context, req *connect.Request[criticv1.RetryLabelingRequest]) (*connect.Response[criticv1.RetryLabelingResponse], error) {
	st, err := shaped[*criticv1.LabelingStatus](s.d.Backend().RetryLabeling(ctx, edge.CallerFrom(ctx), req.Msg.TraceId))
	return reply(&criticv1.RetryLabelingResponse{Labeling: st}, err)
}

// RescoreLabels is REST's POST /traces/{id}/labeling/rescore.
func (s *TraceService) RescoreLabels(ctx context.Context, req *connect.Request[criticv1.RescoreLabelsRequest]) (*connect.Response[criticv1.RescoreLabelsResponse], error) {
	st, err := shaped[*criticv1.LabelingStatus](s.d.Backend().RelabelTrace(ctx, edge.CallerFrom(ctx), req.Msg.TraceId))
	return reply(&criticv1.RescoreLabelsResponse{Labeling: st}, err)
}
