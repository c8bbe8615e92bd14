package connectapi

import (
	"context"

	"connectrpc.com/connect"

	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/handlers/edge"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// CriteriaService implements critic.v1.CriteriaService with the use cases
// REST's /criteria and /guidelines routes call, so both answer the same
// data and errors.
type CriteriaService struct{ d Deps }

// ListCriteria is GET /criteria.
func (s *CriteriaService) ListCriteria(ctx context.Context, req *connect.Request[criticv1.ListCriteriaRequest]) (*connect.Response[criticv1.ListCriteriaResponse], error) {
	cs, err := s.d.Queries.ListCriteria(ctx, edge.CallerFrom(ctx).UserID, req.Msg.IncludeArchived)
	if err != nil {
		return nil, err
	}
	list, err := shapes[*criticv1.Criterion](cs)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.ListCriteriaResponse{Criteria: list}), nil
}

// DefineCriterion is POST /criteria.
func (s *CriteriaService) DefineCriterion(ctx context.Context, req *connect.Request[criticv1.DefineCriterionRequest]) (*connect.Response[criticv1.DefineCriterionResponse], error) {
	caller := edge.CallerFrom(ctx)
	m := req.Msg
	in := criteria.DefineInput{Name: &m.Name, Description: m.Description, Kind: &m.Kind, Labels: labelsFromProto(m.Labels), AppliesTo: &m.AppliesTo}
	if m.ScaleMax != nil {
		n := int(*m.ScaleMax)
		in.ScaleMax = &n
	}
	c, err := s.d.backend().DefineCriterion(ctx, caller, in)
	if err != nil {
		return nil, err
	}
	out, err := shape[*criticv1.Criterion](c)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.DefineCriterionResponse{Criterion: out}), nil
}

// ChangeCriterion is PATCH /criteria/{id}.
func (s *CriteriaService) ChangeCriterion(ctx context.Context, req *connect.Request[criticv1.ChangeCriterionRequest]) (*connect.Response[criticv1.ChangeCriterionResponse], error) {
	caller := edge.CallerFrom(ctx)
	m := req.Msg
	c, err := s.d.backend().ChangeCriterion(ctx, caller, criteria.ChangeInput{CriterionID: m.CriterionId, Name: m.Name,
		Description: m.Description, Labels: labelsFromProto(m.Labels), LabelsSet: m.SetLabels})
	if err != nil {
		return nil, err
	}
	out, err := shape[*criticv1.Criterion](c)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.ChangeCriterionResponse{Criterion: out}), nil
}

// ArchiveCriterion is DELETE /criteria/{id}.
func (s *CriteriaService) ArchiveCriterion(ctx context.Context, req *connect.Request[criticv1.ArchiveCriterionRequest]) (*connect.Response[criticv1.ArchiveCriterionResponse], error) {
	caller := edge.CallerFrom(ctx)
	if err := s.d.backend().ArchiveCriterion(ctx, caller, req.Msg.CriterionId); err != nil {
		return nil, err
	}
	return connect.NewResponse(&criticv1.ArchiveCriterionResponse{}), nil
}

// GetGuidelines is GET /guidelines.
func (s *CriteriaService) GetGuidelines(ctx context.Context, _ *connect.Request[criticv1.GetGuidelinesRequest]) (*connect.Response[criticv1.GetGuidelinesResponse], error) {
	g, err := s.d.Queries.GetGuidelines(ctx, edge.CallerFrom(ctx).UserID)
	if err != nil {
		return nil, err
	}
	out, err := shape[*criticv1.GetGuidelinesResponse](g)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

// SetGuidelines is PUT /guidelines.
func (s *CriteriaService) SetGuidelines(ctx context.Context, req *connect.Request[criticv1.SetGuidelinesRequest]) (*connect.Response[criticv1.SetGuidelinesResponse], error) {
	caller := edge.CallerFrom(ctx)
	g, err := s.d.backend().SetGuidelines(ctx, caller, &req.Msg.Markdown)
	if err != nil {
		return nil, err
	}
	out, err := shape[*criticv1.SetGuidelinesResponse](g)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

func labelsFromProto(in []*criticv1.LabelInput) []criteria.LabelInput {
	var out []criteria.LabelInput
	for _, l := range in {
		li := criteria.LabelInput{Name: l.Name}
		if l.Score != nil {
			n := int(*l.Score)
			li.Score = &n
		}
		out = append(out, li)
	}
	return out
}
