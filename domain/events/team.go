package events

import "encoding/json"

// Event types of team review (issue 36): assignment with overlap and
// adjudication of disputed targets.
const (
	// AnnotationAdjudicated is on the trace's stream.
	AnnotationAdjudicated = "annotation.adjudicated.v1"
	// UserReviewOverlapSet is on the account's user stream.
	UserReviewOverlapSet = "user.review_overlap_set.v1"
)

// AnnotationAdjudicatedV1 is an admin's final judgment of a target the
// members disagree on: for training it supersedes every member's rating
// (or, with CriterionID, every member's value of that criterion) of the
// target, and it stays in the log with its reason. A later adjudication
// of the same target replaces it.
type AnnotationAdjudicatedV1 struct {
	AdjudicationID string `json:"adjudication_id"`
	TraceID        string `json:"trace_id"`
	// StepID is the adjudicated step; "" is the whole trace.
	StepID string `json:"step_id,omitempty"`
	// Rating is the final rating (+1 or −1) when CriterionID is "".
	Rating int `json:"rating,omitempty"`
	// CriterionID and Value are the final value of a criterion.
	CriterionID string          `json:"criterion_id,omitempty"`
	Value       json.RawMessage `json:"value,omitempty"`
	Reason      string          `json:"reason"`
	// By is the member who adjudicated.
	By            string `json:"by"`
	TraceRevision int    `json:"trace_revision"`
}

// UserReviewOverlapSetV1 sets how many members should judge each review
// queue item (1 = each item once, the default of an account without it).
type UserReviewOverlapSetV1 struct {
	UserID  string `json:"user_id"`
	Overlap int    `json:"overlap"`
}
