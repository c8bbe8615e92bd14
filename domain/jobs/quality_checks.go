package jobs

import (
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/labels"
	"github.com/criticml/critic/domain/stepscores"
)

// Quality-check routes of the worker service, relative to ServicePrefix. A
// grader runs within a label job, after the labels: it fetches the open
// steps of the revision that have no check yet and reports the grading
// model's answers.
const (
	RouteQualityCheckSource = "POST /quality-checks/{trace_id}/source"
	RouteQualityCheckRecord = "POST /quality-checks/{trace_id}"
	qualityChecksPathPrefix = ServicePrefix + "/quality-checks/"
)

// QualityCheckSourcePath and QualityCheckRecordPath are the URLs a grader
// calls for an escaped trace id.
func QualityCheckSourcePath(escapedTraceID string) string {
	return qualityChecksPathPrefix + escapedTraceID + labelSourceAction
}

// QualityCheckRecordPath: see QualityCheckSourcePath.
func QualityCheckRecordPath(escapedTraceID string) string {
	return qualityChecksPathPrefix + escapedTraceID
}

// QualityCheckSourceRequest asks for what a revision's grader needs.
type QualityCheckSourceRequest struct {
	WorkerID string `json:"worker_id"`
	Revision int    `json:"revision"`
}

// OpenStep is a step to ask about and the question to ask.
type OpenStep struct {
	ChunkID  string              `json:"chunk_id"`
	Question stepscores.Question `json:"question"`
}

// QualityCheckSource is the answer: the revision's steps, its labels, and
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

// QualityCheckReport records a grading model's answers for a revision.
type QualityCheckReport struct {
	WorkerID      string             `json:"worker_id"`
	Revision      int                `json:"revision"`
	Model         string             `json:"model"`
	PromptVersion string             `json:"prompt_version"`
	Checks        []stepscores.Check `json:"checks"`
	Usage         events.LLMUsage    `json:"usage"`
}
