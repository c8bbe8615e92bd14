package connectapi

import (
	"context"
	"strconv"

	"connectrpc.com/connect"

	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// RewardModelService implements critic.v1.RewardModelService over the
// operations REST's /reward-models and /traces/{id}/score routes use.
type RewardModelService struct{ d edge.Deps }

// CreateRewardModel queues a model. An empty name is an absent one, as
// proto3 cannot tell them apart.
func (s *RewardModelService) CreateRewardModel(ctx context.Context, req *connect.Request[criticv1.CreateRewardModelRequest]) (*connect.Response[criticv1.CreateRewardModelResponse], error) {
	m := req.Msg
	rm, err := shaped[*criticv1.RewardModel](s.d.Backend().CreateRewardModel(ctx, edge.CallerFrom(ctx), usecase.TrainingRequest{
		Name: usecase.NonEmpty(m.Name), TraceIDs: m.TraceIds, BaseModel: m.BaseModel, Epochs: intPtr(m.Epochs), MaxPairs: intPtr(m.MaxPairs),
		TrainingConfig: trainingConfigFromProto(m.TrainingConfig)}))
	return reply(&criticv1.CreateRewardModelResponse{RewardModel: rm}, err)
}

// ListRewardModels lists the caller's models, newest first.
func (s *RewardModelService) ListRewardModels(ctx context.Context, _ *connect.Request[criticv1.ListRewardModelsRequest]) (*connect.Response[criticv1.ListRewardModelsResponse], error) {
	list, err := shapedList[*criticv1.RewardModel](s.d.Queries.ListRewardModels(ctx, edge.CallerFrom(ctx).UserID))
	return reply(&criticv1.ListRewardModelsResponse{RewardModels: list}, err)
}

// GetRewardModel returns one of the caller's models with its selection.
func (s *RewardModelService) GetRewardModel(ctx context.Context, req *connect.Request[criticv1.GetRewardModelRequest]) (*connect.Response[criticv1.GetRewardModelResponse], error) {
	d, err := s.d.Queries.GetRewardModel(ctx, edge.CallerFrom(ctx).UserID, req.Msg.RewardModelId)
	if err != nil {
		return nil, err
	}
	out, err := shape[*criticv1.GetRewardModelResponse](d)
	if err != nil {
		return nil, err
	}
	if out.RewardModel, err = shape[*criticv1.RewardModel](&d.RewardModel); err != nil {
		return nil, err
	}
	// REST's feedback is null until extraction recorded findings.
	out.FeedbackRecorded = len(d.Feedback) > 0 && string(d.Feedback) != "null"
	return connect.NewResponse(out), nil
}

// RetryRewardModel re-queues one of the caller's failed models.
func (s *RewardModelService) RetryRewardModel(ctx context.Context, req *connect.Request[criticv1.RetryRewardModelRequest]) (*connect.Response[criticv1.RetryRewardModelResponse], error) {
	rm, err := shaped[*criticv1.RewardModel](s.d.Backend().RetryRewardModel(ctx, edge.CallerFrom(ctx), req.Msg.RewardModelId))
	return reply(&criticv1.RetryRewardModelResponse{RewardModel: rm}, err)
}

// SetBackgroundScoring pauses or resumes one of the caller's succeeded
// models' background scoring (REST's PUT .../background-scoring).
func (s *RewardModelService) SetBackgroundScoring(ctx context.Context, req *connect.Request[criticv1.SetBackgroundScoringRequest]) (*connect.Response[criticv1.SetBackgroundScoringResponse], error) {
	bg, err := shaped[*criticv1.BackgroundScoring](s.d.Backend().SetBackgroundScoring(ctx, edge.CallerFrom(ctx), req.Msg.RewardModelId, req.Msg.Paused))
	return reply(&criticv1.SetBackgroundScoringResponse{BackgroundScoring: bg}, err)
}

// GetWeights signs a download link of a succeeded model's checkpoint.
func (s *RewardModelService) GetWeights(ctx context.Context, req *connect.Request[criticv1.GetWeightsRequest]) (*connect.Response[criticv1.GetWeightsResponse], error) {
	url, err := s.d.Backend().WeightsURL(ctx, s.d.Blobs, edge.CallerFrom(ctx), req.Msg.RewardModelId)
	return reply(&criticv1.GetWeightsResponse{Url: url}, err)
}

// ScoreTrace asks for a trace to be scored. An empty reward_model_id is an
// absent one.
func (s *RewardModelService) ScoreTrace(ctx context.Context, req *connect.Request[criticv1.ScoreTraceRequest]) (*connect.Response[criticv1.ScoreTraceResponse], error) {
	run, err := shaped[*criticv1.ScoringRun](s.d.Backend().ScoreTrace(ctx, edge.CallerFrom(ctx), req.Msg.TraceId, usecase.NonEmpty(req.Msg.RewardModelId)))
	return reply(&criticv1.ScoreTraceResponse{ScoringRun: run}, err)
}

// ReviewQueue is GET /review-queue (limit 0 → the default).
func (s *RewardModelService) ReviewQueue(ctx context.Context, req *connect.Request[criticv1.ReviewQueueRequest]) (*connect.Response[criticv1.ReviewQueueResponse], error) {
	limit, err := queueLimit(req.Msg.Limit, usecase.DefaultReviewLimit, usecase.MaxReviewLimit)
	if err != nil {
		return nil, err
	}
	b, caller := s.d.Backend(), edge.CallerFrom(ctx)
	member, err := b.OthersMember(ctx, caller, req.Msg.GetMember())
	if err != nil {
		return nil, err
	}
	q, err := b.ReviewQueue(ctx, caller, member, req.Msg.RewardModelId, limit)
	return reply(shaped[*criticv1.ReviewQueueResponse](q, err))
}

// queueLimit is a queue's limit field: 0 (absent in proto3) is def, any
// other value is checked as REST checks ?limit (usecase.QueueLimit).
func queueLimit(n int32, def, max int) (int, error) {
	if n == 0 {
		return def, nil
	}
	return usecase.QueueLimit(strconv.Itoa(int(n)), def, max)
}
