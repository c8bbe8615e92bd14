package events

// Criteria are an account's structured review questions (issue 33,
// "Structured criteria"): one stream per account holds every definition,
// so a new name is checked against all the account's live criteria at one
// stream version. A criterion's values are annotations in the traces'
// streams (AnnotationAddedV1.CriterionID), like ratings.
const (
	CriterionDefined  = "criterion.defined.v1"
	CriterionChanged  = "criterion.changed.v1"
	CriterionArchived = "criterion.archived.v1"
	// GuidelinesSet replaces the account's review guidelines (Markdown).
	GuidelinesSet = "guidelines.set.v1"
)

// CriteriaStream is the stream of an account's criterion definitions.
func CriteriaStream(ownerID string) string { return "criteria/" + ownerID }

// GuidelinesStream is the stream of an account's review guidelines.
func GuidelinesStream(ownerID string) string { return "guidelines/" + ownerID }

// CriterionLabel is one choice of a categorical criterion; Score (-1, 0 or
// 1) is what a value of it counts for in training.
type CriterionLabel struct {
	Name  string `json:"name"`
	Score int    `json:"score"`
}

// CriterionDefinedV1 is POST /criteria: a new criterion.
type CriterionDefinedV1 struct {
	CriterionID string           `json:"criterion_id"`
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Kind        string           `json:"kind"` // binary, categorical or scale
	Labels      []CriterionLabel `json:"labels,omitempty"`
	ScaleMax    int              `json:"scale_max,omitempty"`
	AppliesTo   string           `json:"applies_to"` // trace, assistant or tool_call
}

// CriterionChangedV1 carries the criterion's name, description and labels
// after a PATCH (not a diff). Labels only grow: label i of the new list is
// label i of the old one, renamed or re-scored, so a stored value keeps
// naming the same choice (readers rename stored values with it).
type CriterionChangedV1 struct {
	CriterionID string           `json:"criterion_id"`
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Labels      []CriterionLabel `json:"labels,omitempty"`
}

// CriterionArchivedV1 is DELETE /criteria/{id}: the criterion is no longer
// offered, its stored values stay.
type CriterionArchivedV1 struct {
	CriterionID string `json:"criterion_id"`
}

// GuidelinesSetV1 is PUT /guidelines.
type GuidelinesSetV1 struct {
	Markdown string `json:"markdown"`
}
