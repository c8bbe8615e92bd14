package connectapi

import (
	"encoding/json"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/projections/readmodel"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// trainingConfigFromProto maps training_config; empty criteria are absent
// (proto3 cannot tell them apart).
func trainingConfigFromProto(c *criticv1.TrainingConfig) *commands.TrainingConfig {
	if c == nil {
		return nil
	}
	out := &commands.TrainingConfig{AnnotationSource: c.AnnotationSource}
	if c.InputVersion != nil {
		n := int(*c.InputVersion)
		out.InputVersion = &n
	}
	if len(c.Criteria) > 0 {
		out.Criteria, out.CriteriaSet = c.Criteria, true
	}
	out.Criterion = c.Criterion
	return out
}

// feedbackToProto fills the learning report and usage of a detail.
func feedbackToProto(d *readmodel.RewardModelDetail, out *criticv1.GetRewardModelResponse) error {
	for _, u := range d.LLMUsage {
		out.LlmUsage = append(out.LlmUsage, &criticv1.LLMUsage{Model: u.Model, Calls: int32(u.Calls), InputTokens: u.InputTokens,
			OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedTokens})
	}
	if string(d.Feedback) == "null" || len(d.Feedback) == 0 {
		return nil
	}
	var entries []readmodel.FeedbackEntry
	if err := json.Unmarshal(d.Feedback, &entries); err != nil {
		return err
	}
	out.FeedbackRecorded = true
	for _, e := range entries {
		f := &criticv1.Finding{TraceId: e.TraceID, StepIndex: int32(e.StepIndex), Label: e.Label, Confidence: e.Confidence, Source: e.Source,
			EvidenceId: e.EvidenceID, EvidenceQuote: e.EvidenceQuote, Reason: e.Reason, ClassifierModel: e.ClassifierModel,
			IncludedInTraining: e.IncludedInTraining, IncludedInEvaluation: e.IncludedInEvaluation, Id: e.ID, StepId: e.StepID, ToolName: e.ToolName, Outcome: e.Outcome,
			PromptVersion: e.PromptVersion, Criteria: e.Criteria, OriginalAction: e.OriginalAction, AlternativeAction: e.AlternativeAction}
		if u := e.Usage; u != nil {
			f.Usage = &criticv1.LLMUsage{Model: u.Model, Calls: int32(u.Calls), InputTokens: int64(u.InputTokens),
				OutputTokens: int64(u.OutputTokens), CachedInputTokens: int64(u.CachedTokens)}
		}
		if r := e.Review; r != nil {
			f.Review = &criticv1.FindingReview{Preferred: r.Preferred, Grounded: r.Grounded, Reason: r.Reason, Passed: r.Passed}
		}
		out.Feedback = append(out.Feedback, f)
	}
	return nil
}
