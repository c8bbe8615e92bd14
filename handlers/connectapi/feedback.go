package connectapi

import (
	"github.com/criticml/critic/commands"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// trainingConfigFromProto maps training_config; empty criteria are absent
// (proto3 cannot tell them apart).
func trainingConfigFromProto(c *criticv1.TrainingConfig) *commands.TrainingConfig {
	if c == nil {
		return nil
	}
	out := &commands.TrainingConfig{AnnotationSource: c.AnnotationSource, InputVersion: intPtr(c.InputVersion), Criterion: c.Criterion}
	if len(c.Criteria) > 0 {
		out.Criteria, out.CriteriaSet = c.Criteria, true
	}
	return out
}
