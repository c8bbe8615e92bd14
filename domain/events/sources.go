package events

// TraceSourceRenamed gives a trace source a display name for its owner. The
// source id stays stable; only the name shown changes, so traces, revisions
// and evaluations are untouched.
const TraceSourceRenamed = "trace_source.renamed.v1"

// TraceSourceRenamedV1 is PUT /trace-sources.
type TraceSourceRenamedV1 struct {
	SourceID string `json:"source_id"`
	Name     string `json:"name"`
}

// TraceSourceStream is one stream per (owner, source id).
func TraceSourceStream(ownerID, sourceID string) string {
	return "trace_source/" + ownerID + "/" + sourceID
}
