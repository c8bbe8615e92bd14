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
type CriteriaService struct{ d edge.Deps }

// ListCriteria is GET /criteria.
func (s *CriteriaService) ListCriteria(ctx context.Context, req *connect.Request[criticv1.ListCriteriaRequest]) (*connect.Response[criticv1.ListCriteriaResponse], error) {
	list, err := shapedList[*criticv1.Criterion](s.d.Queries.ListCriteria(ctx, edge.CallerFrom(ctx).UserID, req.Msg.IncludeArchived))
	return reply(&criticv1.ListCriteriaResponse{Criteria: list}, err)
}

// DefineCriterion is POST /criteria.
func (s *CriteriaService) DefineCriterion(ctx context.Context, req *connect.Request[criticv1.DefineCriterionRequest]) (*connect.Response[criticv1.DefineCriterionResponse], error) {
	m := req.Msg
	in := criteria.DefineInput{Name: &m.Name, Description: m.Description, Kind: &m.Kind, Labels: labelsFromProto(m.Labels), ScaleMax: intPtr(m.ScaleMax), AppliesTo: &m.AppliesTo}
	c, err := shaped[*criticv1.Criterion](s.d.Backend().DefineCriterion(ctx, edge.CallerFrom(ctx), in))
	return reply(&criticv1.DefineCriterionResponse{Criterion: c}, err)
}

// ChangeCriterion is PATCH /criteria/{id}.
func (s *CriteriaService) ChangeCriterion(ctx context.Context, req *connect.Request[criticv1.ChangeCriterionRequest]) (*connect.Response[criticv1.ChangeCriterionResponse], error) {
	m := req.Msg
	c, err := shaped[*criticv1.Criterion](s.d.Backend().ChangeCriterion(ctx, edge.CallerFrom(ctx), criteria.ChangeInput{CriterionID: m.CriterionId, Name: m.Name,
		Description: m.Description, Labels: labelsFromProto(m.Labels), LabelsSet: m.SetLabels}))
	return reply(&criticv1.ChangeCriterionResponse{Criterion: c}, err)
}

// ArchiveCriterion is DELETE /criteria/{id}.
func (s *CriteriaService) ArchiveCriterion(ctx context.Context, req *connect.Request[criticv1.ArchiveCriterionRequest]) (*connect.Response[criticv1.ArchiveCriterionResponse], error) {
	err := s.d.Backend().ArchiveCriterion(ctx, edge.CallerFrom(ctx), req.Msg.CriterionId)
	return reply(&criticv1.ArchiveCriterionResponse{}, err)
}

// GetGuidelines is GET /guidelines.
func (s *CriteriaService) GetGuidelines(ctx context.Context, _ *connect.Request[criticv1.GetGuidelinesRequest]) (*connect.Response[criticv1.GetGuidelinesResponse], error) {
	return reply(shaped[*criticv1.GetGuidelinesResponse](s.d.Queries.GetGuidelines(ctx, edge.CallerFrom(ctx).UserID)))
}

// SetGuidelines is PUT /guidelines.
func (s *CriteriaService) SetGuidelines(ctx context.Context, req *connect.Request[criticv1.SetGuidelinesRequest]) (*connect.Response[criticv1.SetGuidelinesResponse], error) {
	return reply(shaped[*criticv1.SetGuidelinesResponse](s.d.Backend().SetGuidelines(ctx, edge.CallerFrom(ctx), &req.Msg.Markdown)))
}

func labelsFromProto(in []*criticv1.LabelInput) []criteria.LabelInput {
	var out []criteria.LabelInput
	for _, l := range in {
		out = append(out, criteria.LabelInput{Name: l.Name, Score: intPtr(l.Score)})
	}
	return out
}
