package jobs

import "github.com/criticml/critic/domain/events"

// TopicAssess carries section-summary and completion jobs: the dispatch
// projection publishes one per trace.assessment_requested when the
// deployment has a fast model.
const TopicAssess = "critic.jobs.assess"

// AssessJob is a critic.jobs.assess value (key = trace id).
type AssessJob struct {
	TraceID string                  `json:"trace_id"`
	OwnerID string                  `json:"owner_id"`
	Kind    string                  `json:"kind"`
	Items   []events.AssessmentItem `json:"items"`
}

// Assessment routes of the worker service, relative to ServicePrefix.
const (
	RouteAssessSource = "POST /assessments/{trace_id}/source"
	RouteAssessRecord = "POST /assessments/{trace_id}"
)

// AssessSourcePath and AssessRecordPath are the URLs a worker calls.
func AssessSourcePath(escapedTraceID string) string {
	return ServicePrefix + "/assessments/" + escapedTraceID + "/source"
}

// AssessRecordPath: see AssessSourcePath.
func AssessRecordPath(escapedTraceID string) string {
	return ServicePrefix + "/assessments/" + escapedTraceID
}

// AssessSourceRequest asks for the model inputs of a job's items.
type AssessSourceRequest struct {
	WorkerID string                  `json:"worker_id"`
	Kind     string                  `json:"kind"`
	Items    []events.AssessmentItem `json:"items"`
}

// AssessInput is one item still current, with its prompt.
type AssessInput struct {
	Item         events.AssessmentItem `json:"item"`
	Instructions string                `json:"instructions"`
	Input        string                `json:"input"`
}

// AssessSource is the answer: the items still current (stale ones left out).
type AssessSource struct {
	Inputs []AssessInput `json:"inputs"`
}

// AssessReport is a worker's answer for one item: the generated section
// (kind sections) or tasks (kind completion), or Error.
type AssessReport struct {
	WorkerID string                  `json:"worker_id"`
	Kind     string                  `json:"kind"`
	Item     events.AssessmentItem   `json:"item"`
	Section  *SectionAnswer          `json:"section,omitempty"`
	Tasks    []events.CompletionTask `json:"tasks,omitempty"`
	Model    string                  `json:"model"`
	Usage    events.LLMUsage         `json:"usage"`
	Error    string                  `json:"error,omitempty"`
}

// SectionAnswer is a generated section assessment (the range is the item's).
type SectionAnswer struct {
	Title     string   `json:"title"`
	Summary   string   `json:"summary"`
	Objective string   `json:"objective"`
	Score     *float64 `json:"score"`
	Reason    string   `json:"reason"`
}
