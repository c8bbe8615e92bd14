package connectapi

import (
	"context"
	"encoding/json"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/handlers/edge"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// TeamService implements critic.v1.TeamService (issue 36) with the
// commands and use cases REST's team routes call, so both answer the same
// data and errors.
type TeamService struct{ d Deps }

// ListMembers is GET /members.
func (s *TeamService) ListMembers(ctx context.Context, _ *connect.Request[criticv1.ListMembersRequest]) (*connect.Response[criticv1.ListMembersResponse], error) {
	ms, err := s.d.Queries.Members(ctx, edge.CallerFrom(ctx).UserID)
	if err != nil {
		return nil, err
	}
	list, err := shapes[*criticv1.Member](ms)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.ListMembersResponse{Members: list}), nil
}

// role parses a request's role; proto3 has no absent string, so empty is
// missing.
func role(s string) (members.Role, error) {
	if s == "" {
		return "", &domain.ValidationError{Code: "invalid_request", Field: "role", Message: "role is required (admin, reviewer or viewer)"}
	}
	return members.ParseRole("role", s)
}

// AddMember is POST /members.
func (s *TeamService) AddMember(ctx context.Context, req *connect.Request[criticv1.AddMemberRequest]) (*connect.Response[criticv1.AddMemberResponse], error) {
	c := edge.CallerFrom(ctx)
	if req.Msg.Name == "" {
		return nil, &domain.ValidationError{Code: "invalid_request", Field: "name", Message: "name is required"}
	}
	r, err := role(req.Msg.Role)
	if err != nil {
		return nil, err
	}
	res, err := s.d.Cmds.AddMember.Handle(ctx, commands.AddMember{AccountID: c.UserID, By: c.MemberID, Name: req.Msg.Name, Role: r})
	if err != nil {
		return nil, err
	}
	if err := s.d.backend().Settle(ctx, res.Result); err != nil {
		return nil, err
	}
	m, err := s.d.Queries.Member(ctx, edge.CallerFrom(ctx).UserID, res.Member.ID)
	if err != nil {
		return nil, err
	}
	out, err := shape[*criticv1.Member](m)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.AddMemberResponse{Member: out, ApiKey: res.APIKey}), nil
}

// ChangeMemberRole is PATCH /members/{member_id}.
func (s *TeamService) ChangeMemberRole(ctx context.Context, req *connect.Request[criticv1.ChangeMemberRoleRequest]) (*connect.Response[criticv1.ChangeMemberRoleResponse], error) {
	c, id := edge.CallerFrom(ctx), req.Msg.MemberId
	r, err := role(req.Msg.Role)
	if err != nil {
		return nil, err
	}
	if _, err := s.d.Queries.Member(ctx, edge.CallerFrom(ctx).UserID, id); err != nil {
		return nil, err
	}
	res, err := s.d.Cmds.ChangeMemberRole.Handle(ctx, commands.ChangeMemberRole{AccountID: c.UserID, By: c.MemberID, MemberID: id, Role: r})
	if err != nil {
		return nil, err
	}
	if err := s.d.backend().Settle(ctx, res); err != nil {
		return nil, err
	}
	m, err := s.d.Queries.Member(ctx, edge.CallerFrom(ctx).UserID, id)
	if err != nil {
		return nil, err
	}
	out, err := shape[*criticv1.Member](m)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.ChangeMemberRoleResponse{Member: out}), nil
}

// RemoveMember is DELETE /members/{member_id}.
func (s *TeamService) RemoveMember(ctx context.Context, req *connect.Request[criticv1.RemoveMemberRequest]) (*connect.Response[criticv1.RemoveMemberResponse], error) {
	c, id := edge.CallerFrom(ctx), req.Msg.MemberId
	if _, err := s.d.Queries.Member(ctx, edge.CallerFrom(ctx).UserID, id); err != nil {
		return nil, err
	}
	res, err := s.d.Cmds.RemoveMember.Handle(ctx, commands.RemoveMember{AccountID: c.UserID, By: c.MemberID, MemberID: id, Reason: req.Msg.Reason})
	if err != nil {
		return nil, err
	}
	if err := s.d.backend().Settle(ctx, res); err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.RemoveMemberResponse{}), nil
}

// GetReviewOverlap is GET /review-overlap.
func (s *TeamService) GetReviewOverlap(ctx context.Context, _ *connect.Request[criticv1.GetReviewOverlapRequest]) (*connect.Response[criticv1.GetReviewOverlapResponse], error) {
	o, err := s.d.backend().GetReviewOverlap(ctx, edge.CallerFrom(ctx))
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.GetReviewOverlapResponse{Overlap: int32(o.Overlap)}), nil
}

// SetReviewOverlap is PUT /review-overlap.
func (s *TeamService) SetReviewOverlap(ctx context.Context, req *connect.Request[criticv1.SetReviewOverlapRequest]) (*connect.Response[criticv1.SetReviewOverlapResponse], error) {
	if req.Msg.Overlap == nil {
		return nil, &domain.ValidationError{Code: "invalid_request", Field: "overlap", Message: "overlap is required: how many members judge each queue item (1–10)"}
	}
	o, err := s.d.backend().SetReviewOverlap(ctx, edge.CallerFrom(ctx), int(*req.Msg.Overlap))
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.SetReviewOverlapResponse{Overlap: int32(o.Overlap)}), nil
}

// GetAgreement is GET /agreement.
func (s *TeamService) GetAgreement(ctx context.Context, req *connect.Request[criticv1.GetAgreementRequest]) (*connect.Response[criticv1.GetAgreementResponse], error) {
	rep, err := s.d.backend().Agreement(ctx, edge.CallerFrom(ctx), req.Msg.GetRewardModelId())
	if err != nil {
		return nil, err
	}
	out, err := shape[*criticv1.GetAgreementResponse](rep)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

// ListDisputed is GET /disputed.
func (s *TeamService) ListDisputed(ctx context.Context, _ *connect.Request[criticv1.ListDisputedRequest]) (*connect.Response[criticv1.ListDisputedResponse], error) {
	d, err := s.d.backend().Disputed(ctx, edge.CallerFrom(ctx))
	if err != nil {
		return nil, err
	}
	out, err := shape[*criticv1.ListDisputedResponse](d)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

// Adjudicate is POST /traces/{trace_id}/adjudications.
func (s *TeamService) Adjudicate(ctx context.Context, req *connect.Request[criticv1.AdjudicateRequest]) (*connect.Response[criticv1.AdjudicateResponse], error) {
	m := req.Msg
	in := commands.AdjudicateInput{TraceID: m.TraceId, StepID: m.GetStepId(), CriterionID: m.GetCriterionId(), Reason: m.Reason}
	if m.Rating != nil {
		r := int(*m.Rating)
		in.Rating = &r
	}
	if m.Value != nil {
		raw, err := protojson.Marshal(m.Value)
		if err != nil {
			return nil, &domain.ValidationError{Code: "invalid_request", Field: "value", Message: "value is not valid JSON: " + err.Error()}
		}
		in.Value = json.RawMessage(raw)
	}
	adj, err := s.d.backend().Adjudicate(ctx, edge.CallerFrom(ctx), in)
	if err != nil {
		return nil, err
	}
	out, err := shape[*criticv1.Adjudication](adj)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.AdjudicateResponse{Adjudication: out}), nil
}

// GetMembersProgress is GET /members/progress.
func (s *TeamService) GetMembersProgress(ctx context.Context, _ *connect.Request[criticv1.GetMembersProgressRequest]) (*connect.Response[criticv1.GetMembersProgressResponse], error) {
	p, err := s.d.backend().MembersProgress(ctx, edge.CallerFrom(ctx))
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
