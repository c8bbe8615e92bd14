package readmodel

import (
	"encoding/json"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/assessment"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/domain/sections"
)

// The shapes below are the REST API's (spec 001 "REST API"); handlers encode
// them as they are, so a client written against the spec works unchanged.

// LatestScore is the newest whole-trace score on a trace summary.
type LatestScore struct {
	RewardModelID   string  `json:"reward_model_id"`
	RewardModelName string  `json:"reward_model_name"`
	Score           float64 `json:"score"`
}

// TraceSummary is one row of GET /traces.
type TraceSummary struct {
	ID              string       `json:"id"`
	ExternalID      *string      `json:"external_id"`
	Title           string       `json:"title"`
	SourceFormat    string       `json:"source_format"`
	SourceID        string       `json:"source_id"`
	SourceName      string       `json:"source_name"`
	SourceOwnerID   string       `json:"source_owner_id"`
	StepCount       int          `json:"step_count"`
	PositiveCount   int          `json:"positive_count"`
	NegativeCount   int          `json:"negative_count"`
	CommentCount    int          `json:"comment_count"`
	LabelErrorCount int          `json:"label_error_count"`
	CreatedAt       time.Time    `json:"created_at"`
	LatestScore     *LatestScore `json:"latest_score"`
	// ActionCredit is the mean credit of the trace's actions as the model
	// that scored them most recently (CreditModelID) scored them, null
	// when none is scored; ScoredActions how many it scored (spec 002
	// "Action credit": the list shows both, apart from LatestScore).
	ActionCredit  *float64 `json:"action_credit"`
	ScoredActions int      `json:"scored_actions"`
	CreditModelID *string  `json:"credit_model_id"`
	// TraceScore and Outcome are the automatic annotation's (spec 001
	// "Step scores", as step_scores on the trace), null without one.
	TraceScore *float64 `json:"trace_score"`
	Outcome    *string  `json:"outcome"`
	// Contribute is the trace's consent to train the shared evaluator
	// (PUT /traces/{id}/contribution); false unless opted in.
	Contribute bool `json:"contribute"`
}

// Step is a step of GET /traces/{id}.
type Step struct {
	ID         string          `json:"id"`
	Index      int             `json:"index"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	ToolName   *string         `json:"tool_name"`
	ToolInput  json.RawMessage `json:"tool_input"`
	ToolCallID *string         `json:"tool_call_id"`
	Metadata   json.RawMessage `json:"metadata"`
}

// Span is a timed operation of GET /traces/{id} (times are decimal strings):
// exactly the canonical span.
type Span = domain.Span

// TraceDetail is GET /traces/{id}.
type TraceDetail struct {
	TraceSummary
	Metadata     json.RawMessage `json:"metadata"`
	Steps        []Step          `json:"steps"`
	Spans        []Span          `json:"spans"`
	Annotations  []Annotation    `json:"annotations"`
	Scores       []TraceScore    `json:"scores"`
	ActionScores []ActionScore   `json:"action_scores"`
	ScoringRuns  []ScoringRun    `json:"scoring_runs"`
	// StepScores are the task scores of the automatic annotation (nil when
	// the trace has no step labels); Sections the section tree. Both are
	// derived from the steps by domain/assessment (see assess).
	StepScores *assessment.StepScores `json:"step_scores"`
	Sections   []sections.Section     `json:"sections"`
	// Labeling says how far the trace's step labeling got (and, without
	// labels, where they come from).
	Labeling *assessment.LabelingStatus `json:"labeling"`
	// Evaluator is the shared evaluator's scoring of this trace, apart
	// from personal models' scores and action_scores.
	Evaluator TraceEvaluator `json:"evaluator"`
	// RewardModels are the owner's reward models trained on this trace
	// (their selection included it), newest first.
	RewardModels []TraceModel `json:"reward_models"`
}

// TraceEvaluator is GET /traces/{id}'s shared-evaluator block: the live
// release's automatic scores of the trace's actions, apart from personal
// models' scores. Status is waiting_for_first_release while no release is
// live; scoring while the live release has not scored the current revision
// yet (ActionScores then still shows an earlier release's scores of this
// revision, if any); scored; or failed (Error says why).
type TraceEvaluator struct {
	Status string `json:"status"`
	// Release is the release ActionScores come from (nil when none);
	// LiveRelease the release live now.
	Release      *int                   `json:"release"`
	LiveRelease  *int                   `json:"live_release"`
	Error        *string                `json:"error"`
	ActionScores []EvaluatorActionScore `json:"action_scores"`
}

// EvaluatorActionScore is one action's evaluator score.
type EvaluatorActionScore struct {
	StepID    string    `json:"step_id"`
	StepIndex int       `json:"step_index"`
	Score     float64   `json:"score"`
	Credit    float64   `json:"credit"`
	Release   int       `json:"release"`
	ScoredAt  time.Time `json:"scored_at"`
}

// Trace evaluator statuses.
const (
	EvaluatorWaiting = "waiting_for_first_release"
	EvaluatorScoring = "scoring"
	EvaluatorScored  = "scored"
	EvaluatorFailed  = "failed"
)

// WaitingForEvaluator is a trace's evaluator block before the first release.
func WaitingForEvaluator() TraceEvaluator {
	return TraceEvaluator{Status: EvaluatorWaiting, ActionScores: []EvaluatorActionScore{}}
}

// Caller is the account behind an API key, and the member it belongs to.
type Caller struct {
	UserID              string
	KeyID               string // the key the request authenticated with
	Name                string
	ReadOnly            bool
	RewardModelsEnabled bool
	// MemberID, MemberName and Role are the key's member (issue 36); a
	// read-only key keeps only its role's reading permissions (read, and
	// query for an admin): see edge.Permit.
	MemberID   string
	MemberName string
	Role       members.Role
}

// ListFilter narrows GET /traces.
type ListFilter struct {
	Limit, Offset int
	SourceID      string
	From, To      *time.Time // inclusive import-date range
	// Query, when set, keeps traces whose title or any step's content,
	// tool name or tool input contains it, case-insensitively (the web
	// app's search box).
	Query string
	// Sort orders the page: SortImported (newest first, the default),
	// SortSource or SortSourceDesc (by displayed source name, newest first
	// within a source), or a score column (see ListSorts).
	Sort ListSort
	// Outcomes, when set, keeps traces whose automatic annotation has one
	// of these outcomes.
	Outcomes []string
	// The score ranges, inclusive; a bound leaves out traces without that
	// score.
	ActionCredit, TraceScore, LatestScore Range
	// Member, when set, keeps traces that member annotated (issue 36): any
	// annotation of theirs on the trace or one of its steps.
	Member string
}

// Range bounds a score column (nil: unbounded).
type Range struct{ Min, Max *float64 }

// ListSort is the order of a trace list.
type ListSort string

// The orders GET /traces?sort= accepts.
const (
	SortImported   ListSort = ""
	SortSource     ListSort = "source"
	SortSourceDesc ListSort = "-source"
)

// scoreSorts are the score columns ?sort also takes, each ascending as
// named and descending with a leading "-". Traces without the value come
// last either way; ties keep the newest import first.
var scoreSorts = []string{"action_credit", "scored_actions", "trace_score", "outcome", "latest_score"}

// ListSorts is every order ?sort accepts, the default ("") first.
func ListSorts() []ListSort {
	out := []ListSort{SortImported, SortSource, SortSourceDesc}
	for _, c := range scoreSorts {
		out = append(out, ListSort(c), ListSort("-"+c))
	}
	return out
}

// Annotation is the Annotation shape of spec 001.
type Annotation struct {
	ID             string          `json:"id"`
	TraceID        string          `json:"trace_id"`
	StepID         *string         `json:"step_id"`
	Rating         *int            `json:"rating"`
	Comment        *string         `json:"comment"`
	Quote          json.RawMessage `json:"quote"`
	LabelError     bool            `json:"label_error"`
	LabelErrorNote *string         `json:"label_error_note"`
	AuthorID       string          `json:"author_id"`
	AuthorName     string          `json:"author_name"`
	// MemberID is the member who made it (issue 36): the author's id, named
	// for what it is now that an account has members.
	MemberID  string    `json:"member_id"`
	CreatedAt time.Time `json:"created_at"`
	// CriterionID and Value are a criterion's value (null for ratings and
	// comments): "yes"/"no", a label name, or an integer of a scale.
	CriterionID *string         `json:"criterion_id"`
	Value       json.RawMessage `json:"value"`
}
