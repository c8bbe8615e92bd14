package events

import "encoding/json"

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
	ID        string `json:"id"`
	OwnerID   string `json:"owner_id"`
	TraceID   string `json:"trace_id"`
	Revision  int    `json:"trace_revision"`
	Group     string `json:"group"`
	FindingID string `json:"finding_id,omitempty"`
	// Chosen and Rejected are the pair's text. A freeze writes them no
	// more (issue 37: a system stream must not keep a contributed trace's
	// words past its erasure); the text is rebuilt from the log as of the
	// version's AsOfSeq when a candidate needs it. Versions frozen before
	// still carry it and replay as they are.
	Chosen   string            `json:"chosen,omitempty"`
	Rejected string            `json:"rejected,omitempty"`
	Slices   map[string]string `json:"slices"`
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

// Candidates and releases of the shared evaluator, on EvaluatorStream.
const (
	// EvaluatorCandidateRequested: an operator asked the worker tier for a
	// candidate (critic evaluator train). It records the dataset it trains
	// on (a blob, with its digest), the benchmark version it is tested on
	// and the release it is compared with, all fixed at request time.
	EvaluatorCandidateRequested = "evaluator.candidate_requested.v1"
	// EvaluatorCandidateStarted: a worker claimed the candidate.
	EvaluatorCandidateStarted = "evaluator.candidate_started.v1"
	// EvaluatorCandidateTrained: the worker trained it and scored the
	// benchmark with it and with the incumbent (the margins the gates read).
	EvaluatorCandidateTrained = "evaluator.candidate_trained.v1"
	// EvaluatorCandidateFailed: training or benchmark scoring failed.
	EvaluatorCandidateFailed = "evaluator.candidate_failed.v1"
	// EvaluatorCandidateHeartbeat: the worker running the candidate renews
	// its lease (it is still training or scoring).
	EvaluatorCandidateHeartbeat = "evaluator.candidate_heartbeat.v1"
	// EvaluatorCandidateRequeued: the running candidate's worker stopped
	// (SIGTERM) and handed it back, or its lease expired with tries left;
	// it is queued again and the dispatch projection publishes its job
	// again.
	EvaluatorCandidateRequeued = "evaluator.candidate_requeued.v1"
	// EvaluatorReleased: a candidate passed the gates and is now the
	// released evaluator; the report and the policy that passed it are
	// recorded, so replay shows why it shipped.
	EvaluatorReleased = "evaluator.released.v1"
	// EvaluatorRolledBack: the live release was withdrawn; the release
	// that was live before it (or none) serves again.
	EvaluatorRolledBack = "evaluator.rolled_back.v1"
)

// EvaluatorCandidateRequestedV1 is a requested candidate.
type EvaluatorCandidateRequestedV1 struct {
	CandidateID string `json:"candidate_id"`
	BaseModel   string `json:"base_model"`
	Epochs      int    `json:"epochs"`
	// AsOfSeq is the log position the dataset was built at.
	AsOfSeq          int64  `json:"as_of_seq"`
	BenchmarkVersion int    `json:"benchmark_version"`
	DatasetKey       string `json:"dataset_key"`
	DatasetSHA256    string `json:"dataset_sha256"`
	NumPairs         int    `json:"num_pairs"`
	// PairSources counts the pairs by source (reviewed_comparison,
	// explicit, correction); SourceTraces and Owners count contributors.
	PairSources  map[string]int `json:"pair_sources"`
	SourceTraces int            `json:"source_traces"`
	Owners       int            `json:"owners"`
	// IncumbentRelease is the release live at request time (0: none) and
	// IncumbentArtifactKey its checkpoint; the candidate is scored against
	// it and can only replace it.
	IncumbentRelease     int    `json:"incumbent_release"`
	IncumbentArtifactKey string `json:"incumbent_artifact_key,omitempty"`
	ArtifactKey          string `json:"artifact_key"`
	RequestedBy          string `json:"requested_by,omitempty"`
	// ErasedItems are the benchmark version's items whose trace was erased
	// before the request: the dataset does not hold them, so the margins
	// do not cover them and the gates judge the candidate on the others.
	ErasedItems []string `json:"erased_items,omitempty"`
}

// EvaluatorCandidateStartedV1 is a claimed candidate.
type EvaluatorCandidateStartedV1 struct {
	CandidateID string `json:"candidate_id"`
	WorkerID    string `json:"worker_id"`
	// LeaseSeconds is how long the claim lives without a heartbeat (0 in
	// claims recorded before candidates had leases: the sweep's lease
	// applies).
	LeaseSeconds int `json:"lease_seconds,omitempty"`
}

// EvaluatorCandidateHeartbeatV1 renews a running candidate's lease.
type EvaluatorCandidateHeartbeatV1 struct {
	CandidateID string `json:"candidate_id"`
	WorkerID    string `json:"worker_id"`
}

// EvaluatorCandidateTrainedV1 is a trained candidate with its benchmark
// margins: r(chosen) − r(rejected) per benchmark item id, for the
// candidate and (when there is one) the incumbent.
type EvaluatorCandidateTrainedV1 struct {
	CandidateID       string             `json:"candidate_id"`
	WorkerID          string             `json:"worker_id"`
	ArtifactKey       string             `json:"artifact_key"`
	Metrics           json.RawMessage    `json:"metrics"`
	ActionRewardStats json.RawMessage    `json:"action_reward_stats"`
	CandidateMargins  map[string]float64 `json:"candidate_margins"`
	IncumbentMargins  map[string]float64 `json:"incumbent_margins"`
}

// EvaluatorCandidateFailedV1 is a failed candidate; Error is the end of
// the worker's log.
type EvaluatorCandidateFailedV1 struct {
	CandidateID string `json:"candidate_id"`
	WorkerID    string `json:"worker_id,omitempty"`
	Error       string `json:"error"`
}

// EvaluatorPolicyV1 is the release policy a verdict was reached under.
type EvaluatorPolicyV1 struct {
	MinSlice  int     `json:"min_slice"`
	Tolerance float64 `json:"tolerance"`
	Rounds    int     `json:"rounds"`
	Seed      uint64  `json:"seed"`
}

// EvaluatorSliceFigures is one row of a gate report (overall or a slice).
type EvaluatorSliceFigures struct {
	Name      string  `json:"name"`
	Items     int     `json:"items"`
	Incumbent float64 `json:"incumbent_accuracy"`
	Candidate float64 `json:"candidate_accuracy"`
	Diff      float64 `json:"diff"`
	Low       float64 `json:"diff_low"`
	High      float64 `json:"diff_high"`
	Populated bool    `json:"populated"`
	Regressed bool    `json:"regressed"`
}

// EvaluatorReleasedV1 is a release.
type EvaluatorReleasedV1 struct {
	Release          int                     `json:"release"`
	CandidateID      string                  `json:"candidate_id"`
	BenchmarkVersion int                     `json:"benchmark_version"`
	ArtifactKey      string                  `json:"artifact_key"`
	Replaces         int                     `json:"replaces"` // the release it replaced (0: none)
	Policy           EvaluatorPolicyV1       `json:"policy"`
	Overall          EvaluatorSliceFigures   `json:"overall"`
	Slices           []EvaluatorSliceFigures `json:"slices"`
	ReleasedBy       string                  `json:"released_by,omitempty"`
}

// EvaluatorRolledBackV1 withdraws release From; To serves again (0: none,
// traces wait for a release again).
type EvaluatorRolledBackV1 struct {
	From         int    `json:"from"`
	To           int    `json:"to"`
	RolledBackBy string `json:"rolled_back_by,omitempty"`
}

// Automatic scoring by the live release, on the trace's own stream (the
// trace's owner owns its scores; deleting the trace drops them).
const (
	// EvaluatorTraceScored: the live release scored every action of one
	// trace revision.
	EvaluatorTraceScored = "evaluator.trace_scored.v1"
	// EvaluatorTraceScoringFailed: scoring that revision failed.
	EvaluatorTraceScoringFailed = "evaluator.trace_scoring_failed.v1"
	// EvaluatorTraceRescoreRequested: the trace's owner asked the live
	// release to score the revision again ("Score again", spec 002): the
	// saved checkpoint runs once more, with no labeling and no training.
	EvaluatorTraceRescoreRequested = "evaluator.trace_rescore_requested.v1"
)

// EvaluatorTraceRescoreRequestedV1 names the revision and the release that
// is to score it again.
type EvaluatorTraceRescoreRequestedV1 struct {
	TraceID       string `json:"trace_id"`
	TraceRevision int    `json:"trace_revision"`
	Release       int    `json:"release"`
}

// EvaluatorActionScore is one action's evaluator score: the raw reward and
// its credit tanh((s − mean) / (2·std)) over the release's training action
// pairs.
type EvaluatorActionScore struct {
	StepID string  `json:"step_id"`
	Score  float64 `json:"score"`
	Credit float64 `json:"credit"`
}

// EvaluatorTraceScoredV1 is a scored trace revision.
type EvaluatorTraceScoredV1 struct {
	TraceID       string                 `json:"trace_id"`
	TraceRevision int                    `json:"trace_revision"`
	Release       int                    `json:"release"`
	WorkerID      string                 `json:"worker_id"`
	Scores        []EvaluatorActionScore `json:"scores"`
}

// EvaluatorTraceScoringFailedV1 is a failed scoring of a trace revision.
type EvaluatorTraceScoringFailedV1 struct {
	TraceID       string `json:"trace_id"`
	TraceRevision int    `json:"trace_revision"`
	Release       int    `json:"release"`
	WorkerID      string `json:"worker_id"`
	Error         string `json:"error"`
}

// EvaluatorCandidateRequeuedV1 puts a running candidate back in the queue.
// Detail says what happened, for the failure message should the last try
// be lost too; LostRuns counts the runs that ended with an expired lease,
// this one included (0 for a hand-back that follows none).
type EvaluatorCandidateRequeuedV1 struct {
	CandidateID string `json:"candidate_id"`
	WorkerID    string `json:"worker_id"`
	Reason      string `json:"reason"` // handed_back | lease_expired
	Detail      string `json:"detail"`
	LostRuns    int    `json:"lost_runs,omitempty"`
}
