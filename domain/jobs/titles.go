package jobs

import "github.com/criticml/critic/domain/events"

// TopicTitle carries title jobs: a trace imported without a title gets one
// from the fast model in the worker tier, asynchronously; until then, and
// on deployments without a fast model, the derived title shows.
const TopicTitle = "critic.jobs.title"

// TitleJob is a critic.jobs.title value (key = trace id): title one
// revision of a trace.
type TitleJob struct {
	TraceID  string `json:"trace_id"`
	Revision int    `json:"revision"`
	OwnerID  string `json:"owner_id"`
}

// Title routes of the worker service, relative to ServicePrefix: a title
// worker fetches a trace's bounded excerpt and reports the fast model's
// title, which becomes trace.titled.
const (
	RouteTitleSource = "POST /titles/{trace_id}/source"
	RouteTitleRecord = "POST /titles/{trace_id}"
)

// TitleSourcePath and TitleRecordPath are the URLs a title worker calls
// for an escaped trace id.
func TitleSourcePath(escapedTraceID string) string {
	return ServicePrefix + "/titles/" + escapedTraceID + "/source"
}

// TitleRecordPath: see TitleSourcePath.
func TitleRecordPath(escapedTraceID string) string {
	return ServicePrefix + "/titles/" + escapedTraceID
}

// TitleSourceRequest asks for the excerpt of a revision.
type TitleSourceRequest struct {
	WorkerID string `json:"worker_id"`
	Revision int    `json:"revision"`
}

// TitleSource is the answer: the excerpt the fast model titles. Needed is
// false when the revision is no longer current, the trace is gone, or it
// has its title already — a duplicate job then costs no model call.
type TitleSource struct {
	TraceID  string `json:"trace_id"`
	Revision int    `json:"revision"`
	Input    string `json:"input"`
	Needed   bool   `json:"needed"`
}

// TitleReport records a generated title and what it cost.
type TitleReport struct {
	WorkerID string            `json:"worker_id"`
	Revision int               `json:"revision"`
	Title    string            `json:"title"`
	Model    string            `json:"model"`
	Usage    []events.LLMUsage `json:"usage"`
}

// TitleRecorded is the answer to a TitleReport: false when the title
// changed nothing (a stale revision, a title already set).
type TitleRecorded struct {
	Recorded bool `json:"recorded"`
}
