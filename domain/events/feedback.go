package events

// Feedback extraction (spec 001 "Personal reward model training", DESIGN §9):
// a worker asks the feedback model about every assistant action of the
// selected traces and reports what it found through the worker service; each
// answer is a fact recorded here, before the minimum-pair check, so a failed
// model keeps its learning report and replay never calls a model again.
const (
	// RewardModelExtractionStarted is a worker's claim on an attempt's
	// extraction (the model stays queued; progress shows the stage).
	RewardModelExtractionStarted = "reward_model.extraction_started.v1"
	// RewardModelExtractionProgressed renews the extraction lease and reports
	// targets done.
	RewardModelExtractionProgressed = "reward_model.extraction_progressed.v1"
	// RewardModelFindingRecorded is one finding — a verdict, an abstention,
	// rejected evidence, a failed review: every one is an event.
	RewardModelFindingRecorded = "reward_model.finding_recorded.v1"
	// RewardModelFeedbackExtracted closes one trace revision's findings
	// (appended with them, after them), with the model, prompt version and
	// token usage.
	RewardModelFeedbackExtracted = "reward_model.feedback_extracted.v1"
	// RewardModelExtractionFinished ends an attempt's extraction; the dataset
	// is built from the log after it.
	RewardModelExtractionFinished = "reward_model.extraction_finished.v1"
	// RewardModelExtractionRequeued ends a running extraction whose worker
	// stopped renewing its lease or handed it back while stopping: the
	// findings it recorded stay, and the dispatch projection publishes the
	// job again for the next free worker.
	RewardModelExtractionRequeued = "reward_model.extraction_requeued.v1"
)

// Annotation sources of a training request (training_config.annotation_source).
const (
	SourceExplicit  = "explicit"
	SourceFeedback  = "feedback"
	SourceAutomatic = "automatic"
)

// TrainingConfig is the request's training_config as stored (defaults
// applied).
type TrainingConfig struct {
	AnnotationSource string   `json:"annotation_source"`
	InputVersion     int      `json:"input_version"`
	Criteria         []string `json:"criteria,omitempty"`
	// ThinkingExcluded: thinking steps (metadata.thinking) are neither
	// rated targets nor scored actions in the dataset. Every request sets
	// it since the rule came in; requests made before lack it, so their
	// datasets rebuild as they were built (`critic audit`).
	ThinkingExcluded bool `json:"thinking_excluded,omitempty"`
	// Criterion, when set, is the criterion whose values the model learns
	// from instead of ratings (explicit only: no findings, comparisons or
	// automatic pairs); CriterionName is its name when the model was
	// requested, what the model page shows. Requests without it build
	// their datasets as before.
	Criterion     string `json:"criterion,omitempty"`
	CriterionName string `json:"criterion_name,omitempty"`
	// ExcludeDisputed leaves out the ratings (or criterion values) of
	// targets the members disagree on and no admin has adjudicated, so a
	// model learns only from what the team agrees on (issue 36).
	ExcludeDisputed bool `json:"exclude_disputed,omitempty"`
}

// FeedbackPlan says, at request or retry time, whether this deployment
// extracts feedback for the attempt: Model is the classifier's model string
// when it does; otherwise Unavailable says why and which variable to set.
type FeedbackPlan struct {
	Model       string `json:"model,omitempty"`
	Unavailable string `json:"unavailable,omitempty"`
}

// LLMUsage is what calls to one model cost.
type LLMUsage struct {
	Model        string `json:"model"`
	Calls        int    `json:"calls"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
	CachedTokens int    `json:"cached_input_tokens"`
}

// Finding outcomes: what became of a finding. Only OutcomePair makes a
// training pair.
const (
	OutcomePair               = "pair"
	OutcomeAbstained          = "abstained"           // label unclear
	OutcomeLowConfidence      = "low_confidence"      // a label, but not high confidence
	OutcomeNotAboutAgent      = "not_about_agent"     // a complaint about the task, not the agent
	OutcomeInvalidEvidence    = "invalid_evidence"    // the cited evidence is not allowed or the quote is not verbatim
	OutcomeNoAlternative      = "no_alternative"      // e.g. generic disappointment without a correction
	OutcomeInvalidAlternative = "invalid_alternative" // duplicate, malformed, or a tool revision that changes nothing
	OutcomeReviewRejected     = "review_rejected"     // the independent review disagreed, tied or found it unsupported
	OutcomeReviewFailed       = "review_failed"       // the review call itself failed
)

// Finding sources.
const (
	FindingUserFeedback = "user_feedback"
	FindingAIJudgment   = "ai_judgment"
)

// FindingReview is the independent review of a finding's comparison.
type FindingReview struct {
	// Preferred is original, alternative or tie, as the reviewer chose
	// between the two candidates shown in a seeded order.
	Preferred string `json:"preferred"`
	Grounded  bool   `json:"grounded"`
	Reason    string `json:"reason"`
	Passed    bool   `json:"passed"`
}

// Finding is one judgment about one assistant action. The fields of spec
// 001's RewardModelDetail.feedback entries are here under the same names;
// the rest is provenance.
type Finding struct {
	ID              string  `json:"id"`
	TraceID         string  `json:"trace_id"`
	StepIndex       int     `json:"step_index"`
	StepID          string  `json:"step_id"`
	ToolName        string  `json:"tool_name,omitempty"`
	Label           string  `json:"label"`
	Confidence      string  `json:"confidence"`
	Source          string  `json:"source"`
	EvidenceID      *string `json:"evidence_id"`
	EvidenceQuote   *string `json:"evidence_quote"`
	Reason          string  `json:"reason"`
	ClassifierModel string  `json:"classifier_model"`
	PromptVersion   string  `json:"prompt_version"`
	// Criteria are the rubric criteria sampled for an AI judgment.
	Criteria          []string       `json:"criteria,omitempty"`
	Outcome           string         `json:"outcome"`
	OriginalAction    string         `json:"original_action"`
	AlternativeAction *string        `json:"alternative_action"`
	Review            *FindingReview `json:"review,omitempty"`
	// Usage is what the calls behind this finding cost (its classification
	// or judgment and its review).
	Usage *LLMUsage `json:"usage,omitempty"`
	// Erased: the finding's trace was erased, and with it every field that
	// quoted it (evidence, reason, actions, review); what is left says
	// which step of which trace the finding was about and what became of it.
	Erased bool `json:"erased,omitempty"`
}

// Redacted is the finding without anything quoted from its trace, marked
// Erased: what the learning report keeps of it after the trace's erasure.
func (f Finding) Redacted() Finding {
	return Finding{ID: f.ID, TraceID: f.TraceID, StepIndex: f.StepIndex, StepID: f.StepID, Label: f.Label, Confidence: f.Confidence,
		Source: f.Source, ClassifierModel: f.ClassifierModel, PromptVersion: f.PromptVersion, Criteria: f.Criteria, Outcome: f.Outcome,
		Usage: f.Usage, Erased: true}
}

// RewardModelExtractionStartedV1 claims an attempt's extraction.
type RewardModelExtractionStartedV1 struct {
	ModelID         string `json:"model_id"`
	Attempt         int    `json:"attempt"`
	WorkerID        string `json:"worker_id"`
	LeaseSeconds    int    `json:"lease_seconds"`
	ClassifierModel string `json:"classifier_model"`
	PromptVersion   string `json:"prompt_version"`
	TargetsTotal    int    `json:"targets_total"`
	InputsKey       string `json:"inputs_key"`
}

// RewardModelExtractionProgressedV1 renews the lease.
type RewardModelExtractionProgressedV1 struct {
	ModelID     string `json:"model_id"`
	Attempt     int    `json:"attempt"`
	WorkerID    string `json:"worker_id"`
	TargetsDone int    `json:"targets_done"`
}

// RewardModelFindingRecordedV1 is one finding of one attempt.
type RewardModelFindingRecordedV1 struct {
	ModelID       string  `json:"model_id"`
	Attempt       int     `json:"attempt"`
	TraceID       string  `json:"trace_id"`
	TraceRevision int     `json:"trace_revision"`
	Finding       Finding `json:"finding"`
}

// QuotedTrace makes a finding a TraceQuote: its evidence and actions are
// the trace's words, sealed with the trace's key.
func (p RewardModelFindingRecordedV1) QuotedTrace() string { return p.TraceID }

// Redacted is the finding as it reads after its trace's erasure.
func (p RewardModelFindingRecordedV1) Redacted() any {
	p.Finding = p.Finding.Redacted()
	return p
}

// RewardModelFeedbackExtractedV1 is the record of one trace revision in one
// attempt. In the log its findings are the finding_recorded events appended
// just before it (FindingIDs lists them; Findings is empty); a worker's
// report and the aggregate carry them inline in Findings. ReusedFrom is set
// when the findings were copied from an earlier attempt's record for the
// same revision and prompt version instead of being paid for again (then
// Usage is empty).
type RewardModelFeedbackExtractedV1 struct {
	ModelID         string `json:"model_id"`
	Attempt         int    `json:"attempt"`
	WorkerID        string `json:"worker_id,omitempty"`
	TraceID         string `json:"trace_id"`
	TraceRevision   int    `json:"trace_revision"`
	ClassifierModel string `json:"classifier_model"`
	PromptVersion   string `json:"prompt_version"`
	ConfigHash      string `json:"config_hash"`
	// InputHash identifies what the calls read — the trace's steps, its
	// comments and rated steps — so a retry after a new comment asks again.
	InputHash  string     `json:"input_hash,omitempty"`
	Targets    int        `json:"targets"`
	Findings   []Finding  `json:"findings,omitempty"`
	FindingIDs []string   `json:"finding_ids,omitempty"`
	Usage      []LLMUsage `json:"usage"`
	ReusedFrom string     `json:"reused_from,omitempty"`
	// Partial is true when extraction stopped early (max_pairs reached) and
	// not every target of the trace was assessed; a partial record is not
	// reused by a retry.
	Partial bool `json:"partial,omitempty"`
}

// RewardModelExtractionFinishedV1 ends an attempt's extraction. Error is set
// when it failed (malformed answers, an unreachable provider): the model
// fails in the same append.
type RewardModelExtractionFinishedV1 struct {
	ModelID  string `json:"model_id"`
	Attempt  int    `json:"attempt"`
	WorkerID string `json:"worker_id"`
	Error    string `json:"error,omitempty"`
}

// RewardModelExtractionRequeuedV1: the holder's lease ran out (Reason
// lease_expired) or it handed the extraction back (handed_back, Detail
// says why) before it finished; the next claim continues after the traces
// it recorded.
type RewardModelExtractionRequeuedV1 struct {
	ModelID  string `json:"model_id"`
	Attempt  int    `json:"attempt"`
	WorkerID string `json:"worker_id"`
	Reason   string `json:"reason"` // lease_expired | handed_back
	Detail   string `json:"detail,omitempty"`
}
