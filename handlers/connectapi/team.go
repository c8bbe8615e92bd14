package connectapi

import (
	"context"
	"encoding/json"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// TeamService implements critic.v1.TeamService (issue 36) with the
// commands and use cases REST's team routes call, so both answer the same
// data and errors.
type TeamService struct{ d edge.Deps }

// ListMembers is GET /members.
func (s *TeamService) ListMembers(ctx context.Context, _ *connect.Request[criticv1.ListMembersRequest]) (*connect.Response[criticv1.ListMembersResponse], error) {
	list, err := shapedList[*criticv1.Member](s.d.Queries.Members(ctx, edge.CallerFrom(ctx).UserID))
	return reply(&criticv1.ListMembersResponse{Members: list}, err)
}

// AddMember is POST /members. Proto3 has no absent string, so an empty name
// or role is a missing one.
func (s *TeamService) AddMember(ctx context.Context, req *connect.Request[criticv1.AddMemberRequest]) (*connect.Response[criticv1.AddMemberResponse], error) {
	if req.Msg.Name == "" {
		return nil, domain.InvalidField("name", "name is required")
	}
	r, err := usecase.MemberRole(usecase.NonEmpty(req.Msg.Role))
	if err != nil {
		return nil, err
	}
	m, res, err := s.d.Backend().AddMember(ctx, edge.CallerFrom(ctx), req.Msg.Name, r)
	out, err := shaped[*criticv1.Member](m, err)
	return reply(&criticv1.AddMemberResponse{Member: out, ApiKey: res.APIKey}, err)
}

// ChangeMemberRole is PATCH /members/{member_id}.
func (s *TeamService) ChangeMemberRole(ctx context.Context, req *connect.Request[criticv1.ChangeMemberRoleRequest]) (*connect.Response[criticv1.ChangeMemberRoleResponse], error) {
	r, err := usecase.MemberRole(usecase.NonEmpty(req.Msg.Role))
	if err != nil {
		return nil, err
	}
	m, err := shaped[*criticv1.Member](s.d.Backend().ChangeMemberRole(ctx, edge.CallerFrom(ctx), req.Msg.MemberId, r))
	return reply(&criticv1.ChangeMemberRoleResponse{Member: m}, err)
}

// RemoveMember is DELETE /members/{member_id}.
func (s *TeamService) RemoveMember(ctx context.Context, req *connect.Request[criticv1.RemoveMemberRequest]) (*connect.Response[criticv1.RemoveMemberResponse], error) {
	err := s.d.Backend().RemoveMember(ctx, edge.CallerFrom(ctx), req.Msg.MemberId, req.Msg.Reason)
	return reply(&criticv1.RemoveMemberResponse{}, err)
}

// GetReviewOverlap is GET /review-overlap.
func (s *TeamService) GetReviewOverlap(ctx context.Context, _ *connect.Request[criticv1.GetReviewOverlapRequest]) (*connect.Response[criticv1.GetReviewOverlapResponse], error) {
	o, err := s.d.Backend().GetReviewOverlap(ctx, edge.CallerFrom(ctx))
	return reply(&criticv1.GetReviewOverlapResponse{Overlap: int32(o.Overlap)}, err)
}

// SetReviewOverlap is PUT /review-overlap.
func (s *TeamService) SetReviewOverlap(ctx context.Context, req *connect.Request[criticv1.SetReviewOverlapRequest]) (*connect.Response[criticv1.SetReviewOverlapResponse], error) {
	if req.Msg.Overlap == nil {
		return nil, domain.InvalidField("overlap", "overlap is required: how many members judge each queue item (1–10)")
	}
	o, err := s.d.Backend().SetReviewOverlap(ctx, edge.CallerFrom(ctx), int(*req.Msg.Overlap))
	return reply(&criticv1.SetReviewOverlapResponse{Overlap: int32(o.Overlap)}, err)
}

// GetAgreement is GET /agreement.
func (s *TeamService) GetAgreement(ctx context.Context, req *connect.Request[criticv1.GetAgreementRequest]) (*connect.Response[criticv1.GetAgreementResponse], error) {
	return reply(shaped[*criticv1.GetAgreementResponse](s.d.Backend().Agreement(ctx, edge.CallerFrom(ctx), req.Msg.GetRewardModelId())))
}

// ListDisputed is GET /disputed.
func (s *TeamService) ListDisputed(ctx context.Context, _ *connect.Request[criticv1.ListDisputedRequest]) (*connect.Response[criticv1.ListDisputedResponse], error) {
	return reply(shaped[*criticv1.ListDisputedResponse](s.d.Backend().Disputed(ctx, edge.CallerFrom(ctx))))
}

// Adjudicate is POST /traces/{trace_id}/adjudications.
func (s *TeamService) Adjudicate(ctx context.Context, req *connect.Request[criticv1.AdjudicateRequest]) (*connect.Response[criticv1.AdjudicateResponse], error) {
	m := req.Msg
	in := commands.AdjudicateInput{TraceID: m.TraceId, StepID: m.GetStepId(), CriterionID: m.GetCriterionId(), Rating: intPtr(m.Rating), Reason: m.Reason}
	if m.Value != nil {
		raw, err := protojson.Marshal(m.Value)
		if err != nil {
			return nil, domain.InvalidField("value", "value is not valid JSON: "+err.Error())
		}
		in.Value = json.RawMessage(raw)
	}
	adj, err := shaped[*criticv1.Adjudication](s.d.Backend().Adjudicate(ctx, edge.CallerFrom(ctx), in))
	return reply(&criticv1.AdjudicateResponse{Adjudication: adj}, err)
}

// GetMembersProgress is GET /members/progress.
func (s *TeamService) GetMembersProgress(ctx context.Context, _ *connect.Request[criticv1.GetMembersProgressRequest]) (*connect.Response[criticv1.GetMembersProgressResponse], error) {
	p, err := s.d.Backend().MembersProgress(ctx, edge.CallerFrom(ctx))
	if err != nil {
		return nil, err
	}
	out, err := shape[*criticv1.GetMembersProgressResponse](p)
	if err != nil {
		return nil, err
	}
	for i, m := range p.Members { // REST flattens the member into its row
		if out.Members[i].Member, err = shape[*criticv1.Member](m.Member); err != nil {
			return nil, err
		}
	}
	return connect.NewResponse(out), nil
}
