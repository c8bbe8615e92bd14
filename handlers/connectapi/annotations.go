package connectapi

import (
	"context"
	"encoding/json"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// AnnotationService implements critic.v1.AnnotationService over the
// operations REST's annotation, export and trace-source routes use.
type AnnotationService struct{ d edge.Deps }

// AddAnnotation adds the caller's annotation and answers it once readable.
func (s *AnnotationService) AddAnnotation(ctx context.Context, req *connect.Request[criticv1.AddAnnotationRequest]) (*connect.Response[criticv1.AddAnnotationResponse], error) {
	m := req.Msg
	in := commands.AddAnnotationInput{TraceID: m.TraceId, StepID: m.GetStepId(), CriterionID: m.GetCriterionId(), Rating: intPtr(m.Rating), Comment: m.Comment}
	if q := m.Quote; q != nil {
		in.Quote = &events.Quote{Text: q.Text, Prefix: q.Prefix, Suffix: q.Suffix}
	}
	if m.Value != nil {
		raw, err := protojson.Marshal(m.Value)
		if err != nil {
			return nil, domain.InvalidField("value", err.Error())
		}
		if string(raw) != "null" {
			in.Value = raw
		}
	}
	ann, err := shaped[*criticv1.Annotation](s.d.Backend().AddAnnotation(ctx, edge.CallerFrom(ctx), in))
	return reply(&criticv1.AddAnnotationResponse{Annotation: ann}, err)
}

// EditAnnotation is REST's PATCH: a set field changes, a clear_* flag makes
// the field null, anything else is kept.
func (s *AnnotationService) EditAnnotation(ctx context.Context, req *connect.Request[criticv1.EditAnnotationRequest]) (*connect.Response[criticv1.EditAnnotationResponse], error) {
	m := req.Msg
	in := traces.EditAnnotationInput{AnnotationID: m.AnnotationId}
	var err error
	if in.Rating, err = patch(intPtr(m.Rating), m.ClearRating, "rating"); err != nil {
		return nil, err
	}
	if in.Comment, err = patch(m.Comment, m.ClearComment, "comment"); err != nil {
		return nil, err
	}
	if in.LabelError, err = patch(m.LabelError, false, "label_error"); err != nil {
		return nil, err
	}
	if in.LabelErrorNote, err = patch(m.LabelErrorNote, m.ClearLabelErrorNote, "label_error_note"); err != nil {
		return nil, err
	}
	if m.Value != nil {
		raw, err := protojson.Marshal(m.Value)
		if err != nil {
			return nil, domain.InvalidField("value", err.Error())
		}
		v := json.RawMessage(raw)
		in.Value = traces.Optional[json.RawMessage]{Set: true, Value: &v}
		if string(raw) == "null" {
			in.Value.Value = nil
		}
	}
	ann, err := shaped[*criticv1.Annotation](s.d.Backend().EditAnnotation(ctx, edge.CallerFrom(ctx), in))
	return reply(&criticv1.EditAnnotationResponse{Annotation: ann}, err)
}

// patch turns a proto3 optional field and its clear flag into a PATCH field:
// set (a value), cleared (REST's null) or absent (kept).
func patch[T any](v *T, clear bool, field string) (traces.Optional[T], error) {
	switch {
	case v != nil && clear:
		return traces.Optional[T]{}, domain.InvalidField(field,
			field+" and clear_"+field+" are both set: send a value or clear it")
	case clear:
		return traces.Optional[T]{Set: true}, nil
	case v != nil:
		x := *v
		return traces.Optional[T]{Set: true, Value: &x}, nil
	}
	return traces.Optional[T]{}, nil
}

// RemoveAnnotation removes one of the caller's annotations and answers once
// it is gone from the read model.
func (s *AnnotationService) RemoveAnnotation(ctx context.Context, req *connect.Request[criticv1.RemoveAnnotationRequest]) (*connect.Response[criticv1.RemoveAnnotationResponse], error) {
	err := s.d.Backend().RemoveAnnotation(ctx, edge.CallerFrom(ctx), req.Msg.AnnotationId)
	return reply(&criticv1.RemoveAnnotationResponse{}, err)
}

// ExportAnnotations streams the records of REST's annotation export, one per
// message, converted from the very JSON lines REST writes.
func (s *AnnotationService) ExportAnnotations(ctx context.Context, req *connect.Request[criticv1.ExportAnnotationsRequest], stream *connect.ServerStream[criticv1.ExportAnnotationsResponse]) error {
	owner := edge.CallerFrom(ctx).UserID
	member, err := s.d.Backend().MemberFilter(ctx, owner, req.Msg.GetMember())
	if err != nil {
		return err
	}
	w := &lineWriter{send: func(line []byte) error {
		a := &criticv1.ExportedAnnotation{}
		if err := fromRESTJSON.Unmarshal(line, a); err != nil {
			return err
		}
		return stream.Send(&criticv1.ExportAnnotationsResponse{Annotation: a})
	}}
	if err := s.d.Queries.ExportAnnotationsBy(ctx, owner, member, w); err != nil {
		return err
	}
	return w.flush()
}

// ExportPairs streams the pairs of REST's pairs export, one per message:
// one model's dataset pairs with reward_model_id, else the preview over all
// traces.
func (s *AnnotationService) ExportPairs(ctx context.Context, req *connect.Request[criticv1.ExportPairsRequest], stream *connect.ServerStream[criticv1.ExportPairsResponse]) error {
	var pairs []domain.Pair
	var err error
	b, owner := s.d.Backend(), edge.CallerFrom(ctx).UserID
	if req.Msg.RewardModelId != nil {
		if req.Msg.MaxPairs != nil {
			return domain.InvalidField("max_pairs", "max_pairs does not apply with reward_model_id: the model's dataset is exported as it is")
		}
		if req.Msg.Member != nil {
			return domain.InvalidField("member", "member does not apply with reward_model_id: the model's dataset is exported as it is")
		}
		pairs, err = b.ModelPairs(ctx, s.d.Blobs, owner, *req.Msg.RewardModelId)
	} else {
		var member string
		if member, err = b.MemberFilter(ctx, owner, req.Msg.GetMember()); err != nil {
			return err
		}
		pairs, err = b.PairsBy(ctx, owner, member, intPtr(req.Msg.MaxPairs))
	}
	if err != nil {
		return err
	}
	for _, p := range pairs {
		out := &criticv1.PreferencePair{Chosen: p.Chosen, Rejected: p.Rejected, TraceIds: p.TraceIDs, Granularity: p.Granularity, ActionType: usecase.NonEmpty(p.ActionType)}
		if err := stream.Send(&criticv1.ExportPairsResponse{Pair: out}); err != nil {
			return err
		}
	}
	return nil
}

// RenameTraceSource sets the caller's display name for a source id. An
// empty source_id or name is an absent one, as proto3 cannot tell them
// apart.
func (s *AnnotationService) RenameTraceSource(ctx context.Context, req *connect.Request[criticv1.RenameTraceSourceRequest]) (*connect.Response[criticv1.RenameTraceSourceResponse], error) {
	m := req.Msg
	err := s.d.Backend().RenameTraceSource(ctx, edge.CallerFrom(ctx), usecase.NonEmpty(m.SourceId), usecase.NonEmpty(m.Name))
	return reply(&criticv1.RenameTraceSourceResponse{SourceId: m.SourceId, Name: m.Name}, err)
}

// intPtr widens a proto3 optional int32 (nil = absent).
func intPtr(v *int32) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}
