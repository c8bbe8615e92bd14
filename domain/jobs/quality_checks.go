package jobs

import (
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/stepscores"
)

// KindQualityCheck is a label job's quality checks: a worker claims and
// reports them within the label job, so the kind has no topic of its own.
var KindQualityCheck = register("quality_check", "")

// OpenStep is a step to ask about and the question to ask.
type OpenStep struct {
	ChunkID  string              `json:"chunk_id"`
	Question stepscores.Question `json:"question"`
}

// QualityCheckSource is the answer to a KindQualityCheck claim (whose job
// is the label job's message; a grader runs within a label job, after the
// labels): the revision's steps, its labels, and
// its open steps without a check. Needed is false when there is nothing to
// ask (see commands.QualityCheckSourceOf).
type QualityCheckSource struct {
	TraceID  string         `json:"trace_id"`
	Revision int            `json:"revision"`
	Needed   bool           `json:"needed"`
	Steps    []domain.Step  `json:"steps"`
	Labels   []labels.Label `json:"labels"`
	Open     []OpenStep     `json:"open"`
}

// QualityCheckReport is a grading model's answers for a revision (the
// result of KindQualityCheck).
type QualityCheckReport struct {
	Model         string             `json:"model"`
	PromptVersion string             `json:"prompt_version"`
	Checks        []stepscores.Check `json:"checks"`
	Usage         events.LLMUsage    `json:"usage"`
}
