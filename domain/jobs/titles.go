package jobs

import "github.com/criticml/critic/domain/events"

// TopicTitle carries title jobs: a trace imported without a title gets one
// from the fast model in the worker tier, asynchronously; until then, and
// on deployments without a fast model, the derived title shows.
const TopicTitle = "critic.jobs.title"

// KindTitle titles a trace revision.
var KindTitle = register("title", TopicTitle)

// TitleJob is a critic.jobs.title value (key = trace id): title one
// revision of a trace.
type TitleJob struct {
	TraceID  string `json:"trace_id"`
	Revision int    `json:"revision"`
	OwnerID  string `json:"owner_id"`
}

// JobID implements Message.
func (m TitleJob) JobID() string { return m.TraceID }

var _ = triggeredBy(KindTitle, titleJobOf)

// titleJobOf is the title job an import or a revision asks for: a trace
// imported without a title gets one from the fast model in the worker
// tier, asynchronously.
func titleJobOf(e events.Envelope) (Message, bool) {
	var p struct {
		TraceID      string `json:"trace_id"`
		Revision     int    `json:"revision"`
		TitleDerived bool   `json:"title_derived"`
	}
	if (e.Type != events.TraceImported && e.Type != events.TraceRevised) || e.Decode(&p) != nil || !p.TitleDerived {
		return nil, false
	}
	return TitleJob{TraceID: p.TraceID, Revision: p.Revision, OwnerID: e.OwnerID}, true
}

// TitleSource is the answer to a KindTitle claim: the excerpt the fast model titles. Needed is
// false when the revision is no longer current, the trace is gone, or it
// has its title already — a duplicate job then costs no model call.
type TitleSource struct {
	TraceID  string `json:"trace_id"`
	Revision int    `json:"revision"`
	Input    string `json:"input"`
	Needed   bool   `json:"needed"`
}

// TitleReport is a title job's result: a generated title and what it cost.
type TitleReport struct {
	Title string            `json:"title"`
	Model string            `json:"model"`
	Usage []events.LLMUsage `json:"usage"`
}

// TitleRecorded is the answer to a TitleReport: false when the title
// changed nothing (a stale revision, a title already set).
type TitleRecorded struct {
	Recorded bool `json:"recorded"`
}
