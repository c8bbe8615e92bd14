package events

// TraceContributionSet records a person's consent for one trace: whether its
// corrections, step ratings and reviewed comparisons may train future shared
// evaluator candidates (spec 002 "The shared evaluator"). Consent is per
// trace and explicit; a trace never imported with it does not contribute.
// Opting out only affects future candidates: weights already released cannot
// unlearn what they were trained on, which is why this is a fact in the log
// (every candidate's dataset can be checked against the consent it saw).
const TraceContributionSet = "trace.contribution_set.v1"

// Where a consent change came from.
const (
	ContributionViaAPI    = "api"    // PUT /traces/{id}/contribution (and the web app)
	ContributionViaImport = "import" // the `contribute` field of an import
)

// TraceContributionSetV1 is one consent change.
type TraceContributionSetV1 struct {
	TraceID    string `json:"trace_id"`
	Contribute bool   `json:"contribute"`
	// Revision is the trace revision current when consent changed; consent
	// covers later revisions too until it changes again.
	Revision int    `json:"revision"`
	Via      string `json:"via"`
}
