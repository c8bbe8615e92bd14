package events

// The shared evaluator's release process (spec 002 "The shared evaluator"):
// operator commands append these to one deployment-wide stream, so every
// benchmark version, candidate and release is a fact the log can replay.
const (
	// EvaluatorBenchmarkFrozen is a new benchmark version: its items as
	// they were at AsOfSeq. Later data never changes a version.
	EvaluatorBenchmarkFrozen = "evaluator.benchmark_frozen.v1"
)

// EvaluatorStream is the shared evaluator's stream.
const EvaluatorStream = "evaluator/shared"

// SystemOwnerID owns deployment-wide facts that belong to no account (the
// events table needs an owner; no account has this id).
const SystemOwnerID = "00000000-0000-0000-0000-000000000000"

// EvaluatorItem is one benchmark item: a decided reviewed comparison of a
// contributing trace, with its group and slices.
type EvaluatorItem struct {
	ID        string            `json:"id"`
	OwnerID   string            `json:"owner_id"`
	TraceID   string            `json:"trace_id"`
	Revision  int               `json:"trace_revision"`
	Group     string            `json:"group"`
	FindingID string            `json:"finding_id,omitempty"`
	Chosen    string            `json:"chosen"`
	Rejected  string            `json:"rejected"`
	Slices    map[string]string `json:"slices"`
	// Source is absent for a reviewed comparison and "verified_outcome"
	// for one decided by verified outcomes: TraceID is then the succeeded
	// trace, RejectedTraceID the failed one (same prior context), and
	// OutcomeFrom where each outcome was read (metadata.outcome,
	// step_labels or rubric_summary), succeeded first.
	Source           string   `json:"source,omitempty"`
	RejectedTraceID  string   `json:"rejected_trace_id,omitempty"`
	RejectedRevision int      `json:"rejected_trace_revision,omitempty"`
	OutcomeFrom      []string `json:"outcome_from,omitempty"`
}

// EvaluatorBenchmarkFrozenV1 is one frozen benchmark version.
type EvaluatorBenchmarkFrozenV1 struct {
	Version int   `json:"version"`
	AsOfSeq int64 `json:"as_of_seq"`
	// BenchmarkPercent is the split rule's share of trace groups.
	BenchmarkPercent int             `json:"benchmark_percent"`
	Items            []EvaluatorItem `json:"items"`
	// ItemRules is which comparisons the version holds (0: reviewed
	// comparisons only; 1: verified-outcome comparisons too), so `verify`
	// rebuilds every version by the rules it was frozen under.
	ItemRules int `json:"item_rules,omitempty"`
	// SliceCounts is items per dimension and value (tool, domain, agent).
	SliceCounts map[string]map[string]int `json:"slice_counts"`
	Frozen      string                    `json:"frozen_by,omitempty"`
}
