package traces

import (
	"encoding/json"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
)

// AdjudicateInput is an admin's final judgment of a target (issue 36):
// a rating, or with CriterionID a criterion's value, and why.
type AdjudicateInput struct {
	AdjudicationID string
	StepID         string // "" = the whole trace
	Rating         *int
	CriterionID    string
	Value          json.RawMessage
	// Criterion is CriterionID's definition (nil: the account has none).
	Criterion *criteria.Criterion
	Reason    string
	By        string
}

// DecideAdjudicate checks a final judgment by the rules a member's
// judgment of the same target follows — a rating is +1 or −1 on the
// trace or an agent action (not a system or thinking step); a value is
// valid for a live criterion and on the kind of target it applies to —
// plus a reason, which the log keeps: a judgment that overrides the
// members' must say why. Any target may be adjudicated, disputed or not;
// a later adjudication of the same target replaces the earlier one.
func DecideAdjudicate(s State, in AdjudicateInput) (events.AnnotationAdjudicatedV1, error) {
	var out events.AnnotationAdjudicatedV1
	bad := func(field, msg string) (events.AnnotationAdjudicatedV1, error) {
		return out, &domain.ValidationError{Code: "invalid_adjudication", Field: field, Message: msg}
	}
	if !s.Exists {
		return out, domain.NotFound("trace", s.ID)
	}
	reason := strings.TrimSpace(in.Reason)
	if reason == "" {
		return bad("reason", "an adjudication needs a reason: it overrides the members' judgments, and the log keeps why")
	}
	if err := domain.CheckText("reason", reason, domain.MaxCommentBytes); err != nil {
		return out, err
	}
	if err := domain.CheckText("step_id", in.StepID, domain.MaxIDBytes); err != nil {
		return out, err
	}
	out = events.AnnotationAdjudicatedV1{AdjudicationID: in.AdjudicationID, TraceID: s.ID, StepID: in.StepID,
		Reason: reason, By: in.By, TraceRevision: s.Revision}
	if in.CriterionID != "" || in.Value != nil {
		switch {
		case in.Rating != nil:
			return bad("rating", "give a rating or a criterion's value, not both")
		case in.CriterionID == "":
			return bad("criterion_id", "a value needs the criterion_id it answers")
		case in.Criterion == nil:
			return bad("criterion_id", "the account has no criterion "+in.CriterionID)
		case in.Criterion.Archived:
			return bad("criterion_id", "criterion \""+in.Criterion.Name+"\" is archived: it takes no new values")
		}
		v, err := in.Criterion.CheckValue(in.Value)
		if err != nil {
			return out, err
		}
		if err := checkTarget(s, in.Criterion, in.StepID); err != nil {
			return out, err
		}
		out.CriterionID, out.Value = in.Criterion.ID, v
		return out, nil
	}
	if in.Rating == nil {
		return bad("rating", "give the final rating (1 or -1) or a criterion_id and value")
	}
	if *in.Rating != 1 && *in.Rating != -1 {
		return bad("rating", "rating must be 1 or -1")
	}
	if in.StepID != "" {
		step, ok := s.step(in.StepID)
		if !ok {
			return bad("step_id", "step "+in.StepID+" is not a step of this trace")
		}
		if step.Role == domain.RoleSystem {
			return bad("step_id", "system steps are context, not agent actions: they take no rating")
		}
		if domain.IsThinking(step.Metadata) {
			return out, thinkingRated(step)
		}
	}
	out.Rating = *in.Rating
	return out, nil
}
