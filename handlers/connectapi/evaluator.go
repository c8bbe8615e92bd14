package connectapi

import (
	"context"
	"time"

	"connectrpc.com/connect"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/comparisons"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// EvaluatorService implements critic.v1.EvaluatorService with the use cases
// REST's consent, comparison and evaluator routes call, so both answer the
// same data and errors.
type EvaluatorService struct{ d Deps }

// SetTraceContribution is PUT /traces/{id}/contribution.
func (s *EvaluatorService) SetTraceContribution(ctx context.Context, req *connect.Request[criticv1.SetTraceContributionRequest]) (*connect.Response[criticv1.SetTraceContributionResponse], error) {
	caller := edge.CallerFrom(ctx)
	c, err := s.d.backend().SetContribution(ctx, caller, req.Msg.TraceId, req.Msg.Contribute)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.SetTraceContributionResponse{TraceId: c.TraceID, Contribute: c.Contribute, Notice: c.Notice}), nil
}

// ComparisonQueue is GET /comparisons/queue (limit 0 → the default).
func (s *EvaluatorService) ComparisonQueue(ctx context.Context, req *connect.Request[criticv1.ComparisonQueueRequest]) (*connect.Response[criticv1.ComparisonQueueResponse], error) {
	limit := usecase.DefaultQueueLimit
	if n := int(req.Msg.Limit); n != 0 {
		if n < 1 || n > usecase.MaxQueueLimit {
			return nil, &domain.ValidationError{Code: "invalid_request", Field: "limit", Message: "limit must be an integer from 1 to 100"}
		}
		limit = n
	}
	q, err := s.d.backend().ComparisonQueue(ctx, edge.CallerFrom(ctx), limit)
	if err != nil {
		return nil, err
	}
	out := &criticv1.ComparisonQueueResponse{}
	for _, it := range q.Items {
		out.Items = append(out.Items, &criticv1.ComparisonQueueItem{ModelId: it.ModelID, FindingId: it.FindingID, TraceId: it.TraceID,
			TraceTitle: it.TraceTitle, TraceRevision: int32(it.TraceRevision), StepId: it.StepID, StepIndex: int32(it.StepIndex), ToolName: it.ToolName,
			Source: it.Source, Context: it.Context, Left: sideToProto(it.Left), Right: sideToProto(it.Right)})
	}
	return connect.NewResponse(out), nil
}

// ReviewComparison is POST /comparisons.
func (s *EvaluatorService) ReviewComparison(ctx context.Context, req *connect.Request[criticv1.ReviewComparisonRequest]) (*connect.Response[criticv1.ReviewComparisonResponse], error) {
	caller := edge.CallerFrom(ctx)
	m := req.Msg
	c, err := s.d.backend().ReviewComparison(ctx, caller, commands.ReviewComparison{ModelID: m.ModelId, FindingID: m.FindingId,
		Verdict: comparisons.Verdict{Left: m.Left, Choice: m.Choice, Comment: m.Comment}})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.ReviewComparisonResponse{ComparisonId: c.ComparisonID, TraceId: c.TraceID, TraceRevision: int32(c.TraceRevision),
		StepId: c.StepID, ReviewerId: c.ReviewerID, FindingId: c.FindingID, ModelId: c.ModelID, Left: sideToProto(c.Left), Right: sideToProto(c.Right),
		Choice: c.Choice, Preferred: c.Preferred, Comment: c.Comment,
		Source: c.Source, OtherModelId: optString(c.OtherModelID), ContextId: optString(c.ContextID)}), nil
}

// GetEvaluator is GET /evaluator.
func (s *EvaluatorService) GetEvaluator(ctx context.Context, _ *connect.Request[criticv1.GetEvaluatorRequest]) (*connect.Response[criticv1.GetEvaluatorResponse], error) {
	p := evaluator.DefaultPolicy()
	if s.d.EvaluatorPolicy != nil {
		p = *s.d.EvaluatorPolicy
	}
	st, err := s.d.backend().Evaluator(ctx, p)
	if err != nil {
		return nil, err
	}
	out := &criticv1.GetEvaluatorResponse{Status: st.Status, Message: st.Message, MinSlice: int32(st.Policy.MinSlice), SliceTolerance: st.Policy.SliceTolerance}
	for _, b := range st.Benchmarks {
		out.Benchmarks = append(out.Benchmarks, &criticv1.EvaluatorBenchmark{Version: int32(b.Version), AsOfSeq: b.AsOfSeq, Items: int32(b.Items),
			FrozenAt: b.FrozenAt.Format(time.RFC3339Nano)})
	}
	for _, r := range st.Releases {
		pr := releaseToProto(r)
		out.Releases = append(out.Releases, pr)
		if r.Live {
			out.Release = pr
		}
	}
	return connect.NewResponse(out), nil
}

// RescoreTrace is POST /traces/{id}/evaluator/rescore ("Score again").
func (s *EvaluatorService) RescoreTrace(ctx context.Context, req *connect.Request[criticv1.RescoreTraceRequest]) (*connect.Response[criticv1.RescoreTraceResponse], error) {
	ev, err := s.d.backend().RescoreWithEvaluator(ctx, edge.CallerFrom(ctx), req.Msg.TraceId)
	if err != nil {
		return nil, err
	}
	out := &criticv1.TraceEvaluator{Status: ev.Status, Error: ev.Error, Release: optInt32(ev.Release), LiveRelease: optInt32(ev.LiveRelease)}
	for _, a := range ev.ActionScores {
		out.ActionScores = append(out.ActionScores, &criticv1.EvaluatorActionScore{StepId: a.StepID, StepIndex: int32(a.StepIndex), Score: a.Score,
			Credit: a.Credit, Release: int32(a.Release), ScoredAt: a.ScoredAt.Format(time.RFC3339Nano)})
	}
	return connect.NewResponse(&criticv1.RescoreTraceResponse{Evaluator: out}), nil
}

// optInt32 is an optional int as its proto field.
func optInt32(n *int) *int32 {
	if n == nil {
		return nil
	}
	v := int32(*n)
	return &v
}

func releaseToProto(r usecase.EvaluatorRelease) *criticv1.EvaluatorRelease {
	pr := &criticv1.EvaluatorRelease{Version: int32(r.Version), CandidateId: r.CandidateID, BenchmarkVersion: int32(r.BenchmarkVersion),
		Live: r.Live, ReleasedAt: r.ReleasedAt.Format(time.RFC3339Nano), Items: int32(r.Benchmark.Items), Accuracy: r.Benchmark.Accuracy,
		IncumbentAccuracy: r.Benchmark.IncumbentAccuracy, Diff: r.Benchmark.Diff, DiffLow: r.Benchmark.DiffLow, DiffHigh: r.Benchmark.DiffHigh,
		Slices: int32(r.Benchmark.Slices), GatedSlices: int32(r.Benchmark.GatedSlices)}
	if r.Replaces != nil {
		pr.Replaces = int32(*r.Replaces)
	}
	if r.RolledBackAt != nil {
		pr.RolledBackAt = r.RolledBackAt.Format(time.RFC3339Nano)
	}
	return pr
}

func sideToProto(s events.ComparisonSide) *criticv1.ComparisonSide {
	return &criticv1.ComparisonSide{Kind: s.Kind, Action: s.Action, ModelId: optString(s.ModelID), TraceId: optString(s.TraceID), StepId: optString(s.StepID)}
}

// optString is nil for an empty string: the optional fields of models
// comparisons are absent on other comparisons, as in the REST JSON.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
