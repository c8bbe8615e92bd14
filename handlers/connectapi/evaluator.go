package connectapi

import (
	"context"

	"connectrpc.com/connect"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// EvaluatorService implements critic.v1.EvaluatorService with the use cases
// REST's consent, comparison and evaluator routes call, so both answer the
// same data and errors.
type EvaluatorService struct{ d edge.Deps }

// SetTraceContribution is PUT /traces/{id}/contribution.
func (s *EvaluatorService) SetTraceContribution(ctx context.Context, req *connect.Request[criticv1.SetTraceContributionRequest]) (*connect.Response[criticv1.SetTraceContributionResponse], error) {
	c, err := s.d.Backend().SetContribution(ctx, edge.CallerFrom(ctx), req.Msg.TraceId, req.Msg.Contribute)
	return reply(&criticv1.SetTraceContributionResponse{TraceId: c.TraceID, Contribute: c.Contribute, Notice: c.Notice}, err)
}

// ComparisonQueue is GET /comparisons/queue (limit 0 → the default).
func (s *EvaluatorService) ComparisonQueue(ctx context.Context, req *connect.Request[criticv1.ComparisonQueueRequest]) (*connect.Response[criticv1.ComparisonQueueResponse], error) {
	limit, err := queueLimit(req.Msg.Limit, usecase.DefaultQueueLimit, usecase.MaxQueueLimit)
	if err != nil {
		return nil, err
	}
	return reply(shaped[*criticv1.ComparisonQueueResponse](s.d.Backend().ComparisonQueue(ctx, edge.CallerFrom(ctx), limit)))
}

// ReviewComparison is POST /comparisons.
func (s *EvaluatorService) ReviewComparison(ctx context.Context, req *connect.Request[criticv1.ReviewComparisonRequest]) (*connect.Response[criticv1.ReviewComparisonResponse], error) {
	m := req.Msg
	c, err := s.d.Backend().ReviewComparison(ctx, edge.CallerFrom(ctx), commands.ReviewComparisonInput{ModelID: m.ModelId, FindingID: m.FindingId,
		Verdict: comparisons.Verdict{Left: m.Left, Choice: m.Choice, Comment: m.Comment}})
	return reply(shaped[*criticv1.ReviewComparisonResponse](c, err))
}

// GetEvaluator is GET /evaluator.
func (s *EvaluatorService) GetEvaluator(ctx context.Context, _ *connect.Request[criticv1.GetEvaluatorRequest]) (*connect.Response[criticv1.GetEvaluatorResponse], error) {
	st, err := s.d.Backend().Evaluator(ctx, s.d.EvaluatorPolicy)
	if err != nil {
		return nil, err
	}
	return reply(evaluatorToProto(st))
}

// RescoreTrace is POST /traces/{id}/evaluator/rescore ("Score again").
func (s *EvaluatorService) RescoreTrace(ctx context.Context, req *connect.Request[criticv1.RescoreTraceRequest]) (*connect.Response[criticv1.RescoreTraceResponse], error) {
	ev, err := shaped[*criticv1.TraceEvaluator](s.d.Backend().RescoreWithEvaluator(ctx, edge.CallerFrom(ctx), req.Msg.TraceId))
	return reply(&criticv1.RescoreTraceResponse{Evaluator: ev}, err)
}

// evaluatorToProto is GET /evaluator's answer: REST nests the policy and
// each release's benchmark figures, the message has them flat.
func evaluatorToProto(st usecase.EvaluatorStatus) (*criticv1.GetEvaluatorResponse, error) {
	out, err := shape[*criticv1.GetEvaluatorResponse](st)
	if err != nil {
		return nil, err
	}
	if err := flatten(out, st.Policy); err != nil {
		return nil, err
	}
	for i, r := range st.Releases {
		if err := flatten(out.Releases[i], r.Benchmark); err != nil {
			return nil, err
		}
	}
	if st.Release != nil {
		if err := flatten(out.Release, st.Release.Benchmark); err != nil {
			return nil, err
		}
	}
	return out, nil
}
