package jobs

import "github.com/criticml/critic/domain/events"

// TopicAssess carries section-summary and completion jobs: the dispatch
// projection publishes one per trace.assessment_requested when the
// deployment has a fast model.
const TopicAssess = "critic.jobs.assess"

// KindAssess is a trace's section summaries and completion check.
var KindAssess = register("assess", TopicAssess)

// AssessJob is a critic.jobs.assess value (key = trace id).
type AssessJob struct {
	TraceID string                  `json:"trace_id"`
	OwnerID string                  `json:"owner_id"`
	Kind    string                  `json:"kind"`
	Items   []events.AssessmentItem `json:"items"`
}

// JobID implements Message.
func (m AssessJob) JobID() string { return m.TraceID }

var _ = triggeredBy(KindAssess, assessJobOf)

// assessJobOf is the job a trace.assessment_requested asks for: the worker
// tier calls the model; the request handler never does.
func assessJobOf(e events.Envelope) (Message, bool) {
	var p events.TraceAssessmentRequestedV1
	if e.Type != events.TraceAssessmentRequested || e.Decode(&p) != nil || p.TraceID == "" || len(p.Items) == 0 {
		return nil, false
	}
	return AssessJob{TraceID: p.TraceID, OwnerID: e.OwnerID, Kind: p.Kind, Items: p.Items}, true
}

// AssessInput is one item still current, with its prompt.
type AssessInput struct {
	Item         events.AssessmentItem `json:"item"`
	Instructions string                `json:"instructions"`
	Input        string                `json:"input"`
}

// AssessSource is the answer to a KindAssess claim: the items still current (stale ones left out).
type AssessSource struct {
	Kind   string        `json:"kind"`
	Inputs []AssessInput `json:"inputs"`
}

// AssessReport is a worker's answer for one item (a KindAssess report):
// the generated section (kind sections) or tasks (kind completion), or
// Error.
type AssessReport struct {
	Item    events.AssessmentItem   `json:"item"`
	Section *SectionAnswer          `json:"section,omitempty"`
	Tasks   []events.CompletionTask `json:"tasks,omitempty"`
	Model   string                  `json:"model"`
	Usage   events.LLMUsage         `json:"usage"`
	Error   string                  `json:"error,omitempty"`
}

// SectionAnswer is a generated section assessment (the range is the item's).
type SectionAnswer struct {
	Title     string   `json:"title"`
	Summary   string   `json:"summary"`
	Objective string   `json:"objective"`
	Score     *float64 `json:"score"`
	Reason    string   `json:"reason"`
}
