package connectapi

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/projections/readmodel"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// The read model's views are the REST shapes; these functions turn them into
// the Connect messages, field for field, so both APIs answer the same data.

func summaryToProto(s *readmodel.TraceSummary) *criticv1.TraceSummary {
	out := &criticv1.TraceSummary{
		Id:              s.ID,
		ExternalId:      s.ExternalID,
		Title:           s.Title,
		SourceFormat:    s.SourceFormat,
		SourceId:        s.SourceID,
		SourceName:      s.SourceName,
		SourceOwnerId:   s.SourceOwnerID,
		StepCount:       int32(s.StepCount),
		PositiveCount:   int32(s.PositiveCount),
		NegativeCount:   int32(s.NegativeCount),
		CommentCount:    int32(s.CommentCount),
		LabelErrorCount: int32(s.LabelErrorCount),
		CreatedAt:       timestamppb.New(s.CreatedAt),
		Contribute:      s.Contribute,
		ActionCredit:    s.ActionCredit,
		ScoredActions:   int32(s.ScoredActions),
		CreditModelId:   s.CreditModelID,
		TraceScore:      s.TraceScore,
		Outcome:         s.Outcome,
	}
	if l := s.LatestScore; l != nil {
		out.LatestScore = &criticv1.LatestScore{RewardModelId: l.RewardModelID, RewardModelName: l.RewardModelName, Score: l.Score}
	}
	return out
}

func detailToProto(d *readmodel.TraceDetail) (*criticv1.TraceDetail, error) {
	out := &criticv1.TraceDetail{Summary: summaryToProto(&d.TraceSummary)}
	var err error
	if out.Metadata, err = jsonStruct(d.Metadata, "metadata"); err != nil {
		return nil, err
	}
	out.Steps = make([]*criticv1.Step, len(d.Steps))
	for i, s := range d.Steps {
		p := &criticv1.Step{Id: s.ID, Index: int32(s.Index), Role: s.Role, Content: s.Content, ToolName: s.ToolName, ToolCallId: s.ToolCallID}
		if p.ToolInput, err = jsonStruct(s.ToolInput, "tool_input"); err != nil {
			return nil, err
		}
		if p.Metadata, err = jsonStruct(s.Metadata, "metadata"); err != nil {
			return nil, err
		}
		out.Steps[i] = p
	}
	out.Spans = make([]*criticv1.Span, len(d.Spans))
	for i, s := range d.Spans {
		p := &criticv1.Span{Id: s.ID, ParentId: s.ParentID, Name: s.Name, Kind: s.Kind, StartNs: s.StartNs, EndNs: s.EndNs,
			StepIndices: make([]int32, len(s.StepIndices))}
		for j, v := range s.StepIndices {
			p.StepIndices[j] = int32(v)
		}
		if p.Input, err = jsonValue(s.Input); err != nil {
			return nil, err
		}
		if p.Output, err = jsonValue(s.Output); err != nil {
			return nil, err
		}
		out.Spans[i] = p
	}
	if out.Annotations, err = jsonList(d.Annotations, func() *criticv1.Annotation { return &criticv1.Annotation{} }); err != nil {
		return nil, err
	}
	if out.Scores, err = jsonList(d.Scores, func() *criticv1.TraceScore { return &criticv1.TraceScore{} }); err != nil {
		return nil, err
	}
	if out.ActionScores, err = jsonList(d.ActionScores, func() *criticv1.ActionScore { return &criticv1.ActionScore{} }); err != nil {
		return nil, err
	}
	if out.ScoringRuns, err = jsonList(d.ScoringRuns, func() *criticv1.ScoringRun { return &criticv1.ScoringRun{} }); err != nil {
		return nil, err
	}
	if d.StepScores != nil {
		out.StepScores = &criticv1.StepScores{}
		if err := viaRESTJSON(d.StepScores, out.StepScores); err != nil {
			return nil, err
		}
	}
	if d.Labeling != nil {
		out.Labeling = &criticv1.LabelingStatus{}
		if err := viaRESTJSON(d.Labeling, out.Labeling); err != nil {
			return nil, err
		}
	}
	if out.Sections, err = jsonList(d.Sections, func() *criticv1.Section { return &criticv1.Section{} }); err != nil {
		return nil, err
	}
	return out, nil
}

// jsonStruct converts a JSON object (or null → unset). The canonical trace
// only stores objects here; anything else is a broken invariant, reported as
// an internal error rather than silently dropped.
func jsonStruct(raw json.RawMessage, what string) (*structpb.Struct, error) {
	if isNull(raw) {
		return nil, nil
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("stored %s is not a JSON object: %w", what, err)
	}
	return s, nil
}

// jsonValue converts any JSON (null → unset).
func jsonValue(raw json.RawMessage) (*structpb.Value, error) {
	if isNull(raw) {
		return nil, nil
	}
	v := &structpb.Value{}
	if err := protojson.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("stored JSON value is not valid: %w", err)
	}
	return v, nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// jsonList converts the REST JSON of a list of annotations or scores into
// messages. It goes through the REST JSON on purpose: those lists are the
// spec's shapes (snake_case names, RFC 3339 times, which protojson reads), so
// whatever Go type the read model gives them, REST and Connect stay the same
// data. Fields the proto does not have yet are skipped.
func jsonList[M proto.Message](list any, newM func() M) ([]M, error) {
	b, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, err
	}
	out := make([]M, len(items))
	for i, it := range items {
		m := newM()
		if err := fromRESTJSON.Unmarshal(it, m); err != nil {
			return nil, fmt.Errorf("convert %T: %w", m, err)
		}
		out[i] = m
	}
	return out, nil
}

// viaRESTJSON converts one read-model view into its message through the REST
// JSON, as jsonList does for lists.
func viaRESTJSON(view any, m proto.Message) error {
	b, err := json.Marshal(view)
	if err != nil {
		return err
	}
	if err := fromRESTJSON.Unmarshal(b, m); err != nil {
		return fmt.Errorf("convert %T: %w", m, err)
	}
	return nil
}

func annotationToProto(a *readmodel.Annotation) (*criticv1.Annotation, error) {
	out := &criticv1.Annotation{}
	return out, viaRESTJSON(a, out)
}

func rewardModelToProto(m *readmodel.RewardModel) (*criticv1.RewardModel, error) {
	out := &criticv1.RewardModel{
		Id:         m.ID,
		Name:       m.Name,
		BaseModel:  m.BaseModel,
		Compute:    m.Compute,
		Epochs:     int32(m.Epochs),
		MaxPairs:   int32(m.MaxPairs),
		TraceCount: int32(m.TraceCount),
		Status:     m.Status,
		Error:      m.Error,
		CreatedAt:  timestamppb.New(m.CreatedAt),
		StartedAt:  timestampOrNil(m.StartedAt),
		FinishedAt: timestampOrNil(m.FinishedAt),
		WorkerId:   m.WorkerID,
		TrainingConfig: &criticv1.ModelTrainingConfig{AnnotationSource: m.TrainingConfig.AnnotationSource,
			InputVersion: int32(m.TrainingConfig.InputVersion), Criterion: m.TrainingConfig.Criterion,
			CriterionName: m.TrainingConfig.CriterionName},
	}
	if m.NumPairs != nil {
		n := int32(*m.NumPairs)
		out.NumPairs = &n
	}
	out.RewardStats, out.ActionRewardStats = statsToProto(m.RewardStats), statsToProto(m.ActionRewardStats)
	var err error
	if out.Metrics, err = jsonValue(m.Metrics); err != nil {
		return nil, err
	}
	if out.Progress, err = jsonStruct(m.Progress, "progress"); err != nil {
		return nil, err
	}
	return out, nil
}

func statsToProto(s *rewardmodels.RewardStats) *criticv1.RewardStats {
	if s == nil {
		return nil
	}
	return &criticv1.RewardStats{Mean: s.Mean, Std: s.Std, Count: int32(s.Count)}
}

func timestampOrNil(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}
