package traces

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/criteria"
	"github.com/criticml/critic/domain/events"
)

// AddAnnotationInput is POST /traces/{id}/annotations after decoding.
type AddAnnotationInput struct {
	AnnotationID string
	StepID       string // "" = the whole trace
	Rating       *int
	Comment      *string
	Quote        *events.Quote
	AuthorID     string
	AuthorName   string
	// CriterionID and Value are a criterion's value; Criterion is that
	// criterion as the account's stream describes it (nil: the account
	// has none with that id).
	CriterionID string
	Value       json.RawMessage
	Criterion   *criteria.Criterion
}

// DecideAddAnnotation applies the annotation rules of spec 001: a rating is 1
// or -1; a rating or a comment is required; a quote needs a step and must
// occur in that step's content, anchored by its prefix and suffix; system
// steps take comments but not ratings (they are context, not actions).
func DecideAddAnnotation(s State, in AddAnnotationInput) (events.AnnotationAddedV1, error) {
	if !s.Exists {
		return events.AnnotationAddedV1{}, domain.NotFound("trace", s.ID)
	}
	if err := checkAddText(in); err != nil {
		return events.AnnotationAddedV1{}, err
	}
	if in.CriterionID != "" || in.Value != nil {
		return decideAddValue(s, in)
	}
	comment := normComment(in.Comment)
	if err := checkRating(in.Rating); err != nil {
		return events.AnnotationAddedV1{}, err
	}
	if in.Rating == nil && comment == nil {
		return events.AnnotationAddedV1{}, invalidAnnotation("", "an annotation needs a rating or a comment")
	}
	if in.Quote != nil && in.StepID == "" {
		return events.AnnotationAddedV1{}, invalidAnnotation("quote", "a quote needs a step_id")
	}
	if in.StepID != "" {
		step, ok := s.step(in.StepID)
		if !ok {
			return events.AnnotationAddedV1{}, invalidAnnotation("step_id", "step %s is not a step of this trace", in.StepID)
		}
		if step.Role == domain.RoleSystem && in.Rating != nil {
			return events.AnnotationAddedV1{}, invalidAnnotation("rating", "system steps are context, not agent actions: they take comments but not ratings")
		}
		if in.Rating != nil && domain.IsThinking(step.Metadata) {
			return events.AnnotationAddedV1{}, thinkingRated(step)
		}
		if in.Quote != nil {
			if in.Quote.Text == "" {
				return events.AnnotationAddedV1{}, invalidAnnotation("quote.text", "quote text is empty")
			}
			if !strings.Contains(step.Content, in.Quote.Prefix+in.Quote.Text+in.Quote.Suffix) {
				return events.AnnotationAddedV1{}, invalidAnnotation("quote.text", "the quote (with its prefix and suffix) does not occur in the step's content")
			}
		}
	}
	return events.AnnotationAddedV1{AnnotationID: in.AnnotationID, TraceID: s.ID, StepID: in.StepID, Rating: in.Rating,
		Comment: comment, Quote: in.Quote, AuthorID: in.AuthorID, AuthorName: in.AuthorName, TraceRevision: s.Revision}, nil
}

// decideAddValue is DecideAddAnnotation for a criterion's value: a value
// alone (no rating, comment or quote: a value is its own annotation, so
// replacing it never touches a rating), of a live criterion of the
// account, valid for its kind, on the kind of target it applies to.
func decideAddValue(s State, in AddAnnotationInput) (events.AnnotationAddedV1, error) {
	switch {
	case in.CriterionID == "":
		return events.AnnotationAddedV1{}, invalidAnnotation("criterion_id", "a value needs the criterion_id it answers")
	case in.Rating != nil:
		return events.AnnotationAddedV1{}, invalidAnnotation("rating", "a criterion value is its own annotation: send the rating in another request")
	case in.Comment != nil:
		return events.AnnotationAddedV1{}, invalidAnnotation("comment", "a criterion value is its own annotation: send the comment in another request")
	case in.Quote != nil:
		return events.AnnotationAddedV1{}, invalidAnnotation("quote", "a criterion value takes no quote")
	case in.Criterion == nil:
		return events.AnnotationAddedV1{}, invalidAnnotation("criterion_id", "the account has no criterion %s", in.CriterionID)
	case in.Criterion.Archived:
		return events.AnnotationAddedV1{}, invalidAnnotation("criterion_id", "criterion %q is archived: it takes no new values", in.Criterion.Name)
	}
	c := in.Criterion
	value, err := c.CheckValue(in.Value)
	if err != nil {
		return events.AnnotationAddedV1{}, err
	}
	if err := checkTarget(s, c, in.StepID); err != nil {
		return events.AnnotationAddedV1{}, err
	}
	return events.AnnotationAddedV1{AnnotationID: in.AnnotationID, TraceID: s.ID, StepID: in.StepID, AuthorID: in.AuthorID,
		AuthorName: in.AuthorName, TraceRevision: s.Revision, CriterionID: c.ID, Value: value}, nil
}

// checkTarget refuses a value on a target its criterion does not apply to:
// a trace criterion takes no step_id; an assistant criterion takes an
// assistant reply (not a tool call, not thinking); a tool_call criterion
// an assistant tool call.
func checkTarget(s State, c *criteria.Criterion, stepID string) error {
	if c.AppliesTo == criteria.AppliesToTrace {
		if stepID != "" {
			return invalidAnnotation("step_id", "criterion %q applies to whole traces: give no step_id", c.Name)
		}
		return nil
	}
	if stepID == "" {
		return invalidAnnotation("step_id", "criterion %q applies to %s steps: give the step_id", c.Name, c.AppliesTo)
	}
	step, ok := s.step(stepID)
	if !ok {
		return invalidAnnotation("step_id", "step %s is not a step of this trace", stepID)
	}
	isCall := step.Role == domain.RoleAssistant && step.ToolName != ""
	isReply := step.Role == domain.RoleAssistant && step.ToolName == "" && !domain.IsThinking(step.Metadata)
	switch {
	case c.AppliesTo == criteria.AppliesToAssistant && !isReply:
		return invalidAnnotation("step_id", "criterion %q applies to assistant replies; step %d (%s) is %s", c.Name, step.Index+1, step.ID, describeStep(step))
	case c.AppliesTo == criteria.AppliesToToolCall && !isCall:
		return invalidAnnotation("step_id", "criterion %q applies to tool calls; step %d (%s) is %s", c.Name, step.Index+1, step.ID, describeStep(step))
	}
	return nil
}

func describeStep(st events.StepRecord) string {
	switch {
	case st.Role == domain.RoleAssistant && st.ToolName != "":
		return "a tool call (" + st.ToolName + ")"
	case st.Role == domain.RoleAssistant && domain.IsThinking(st.Metadata):
		return "thinking"
	case st.Role == domain.RoleAssistant:
		return "an assistant reply"
	}
	return "a " + string(st.Role) + " step"
}

// checkAddText applies the edge's text rule (domain.CheckText) to every
// string of a new annotation: a comment or quote is at most
// domain.MaxCommentBytes, ids and names at their limits.
func checkAddText(in AddAnnotationInput) error {
	type text struct {
		field string
		s     *string
		limit int
	}
	checks := []text{{"step_id", &in.StepID, domain.MaxIDBytes}, {"comment", in.Comment, domain.MaxCommentBytes},
		{"author_name", &in.AuthorName, domain.MaxNameBytes}}
	if q := in.Quote; q != nil {
		checks = append(checks, text{"quote.text", &q.Text, domain.MaxCommentBytes}, text{"quote.prefix", &q.Prefix, domain.MaxCommentBytes},
			text{"quote.suffix", &q.Suffix, domain.MaxCommentBytes})
	}
	for _, c := range checks {
		if c.s == nil {
			continue
		}
		if err := domain.CheckText(c.field, *c.s, c.limit); err != nil {
			return err
		}
	}
	return nil
}

// checkEditText is checkAddText for an edit's texts.
func checkEditText(in EditAnnotationInput) error {
	if in.Comment.Value != nil {
		if err := domain.CheckText("comment", *in.Comment.Value, domain.MaxCommentBytes); err != nil {
			return err
		}
	}
	if in.LabelErrorNote.Value != nil {
		if err := domain.CheckText("label_error_note", *in.LabelErrorNote.Value, domain.MaxCommentBytes); err != nil {
			return err
		}
	}
	return nil
}

// Optional is a PATCH field: Set says whether the request named it (a null
// value clears it).
type Optional[T any] struct {
	Set   bool
	Value *T
}

// EditAnnotationInput is PATCH /annotations/{id} after decoding.
type EditAnnotationInput struct {
	AnnotationID   string
	Rating         Optional[int]
	Comment        Optional[string]
	LabelError     Optional[bool]
	LabelErrorNote Optional[string]
	Value          Optional[json.RawMessage]
	EditorID       string
	// Criterion is the edited annotation's criterion when it is a value
	// (the command looks it up); nil otherwise.
	Criterion *criteria.Criterion
}

// DecideEditAnnotation returns the annotation's values after the edit; the
// same rules as adding hold for the result.
func DecideEditAnnotation(s State, in EditAnnotationInput) (events.AnnotationEditedV1, error) {
	a := s.Annotations[in.AnnotationID]
	if !s.Exists || a == nil {
		return events.AnnotationEditedV1{}, domain.NotFound("annotation", in.AnnotationID)
	}
	if err := checkEditText(in); err != nil {
		return events.AnnotationEditedV1{}, err
	}
	out := events.AnnotationEditedV1{AnnotationID: a.ID, TraceID: s.ID, Rating: a.Rating, Comment: a.Comment,
		LabelError: a.LabelError, LabelErrorNote: a.LabelErrorNote, EditorID: in.EditorID, Value: a.Value}
	// Any annotation, a criterion's value too, may be flagged as a label error.
	if in.LabelError.Set {
		out.LabelError = in.LabelError.Value != nil && *in.LabelError.Value
	}
	if in.LabelErrorNote.Set {
		out.LabelErrorNote = normComment(in.LabelErrorNote.Value)
	}
	if a.CriterionID != "" {
		return decideEditValue(a, in, out)
	}
	if in.Value.Set {
		return out, invalidAnnotation("value", "this annotation is a rating or comment, not a criterion value: it has no value")
	}
	if in.Rating.Set {
		if err := checkRating(in.Rating.Value); err != nil {
			return out, err
		}
		out.Rating = in.Rating.Value
	}
	if in.Comment.Set {
		out.Comment = normComment(in.Comment.Value)
	}
	if out.Rating == nil && out.Comment == nil {
		return out, invalidAnnotation("", "an annotation needs a rating or a comment")
	}
	if out.Rating != nil && a.StepID != "" {
		if step, ok := s.step(a.StepID); ok && step.Role == domain.RoleSystem {
			return out, invalidAnnotation("rating", "system steps take comments but not ratings")
		} else if ok && domain.IsThinking(step.Metadata) && (a.Rating == nil || *a.Rating != *out.Rating) {
			// A rating recorded before the rule may stay as it was (an
			// edit of its comment); none is given or changed now.
			return out, thinkingRated(step)
		}
	}
	return out, nil
}

// decideEditValue is DecideEditAnnotation for a criterion's value: the
// value may change (checked as when added, and not on an archived
// criterion) and it may be flagged as a label error (out carries the flag
// already); it never gains a rating or a comment.
func decideEditValue(a *Annotation, in EditAnnotationInput, out events.AnnotationEditedV1) (events.AnnotationEditedV1, error) {
	if in.Rating.Set && in.Rating.Value != nil {
		return out, invalidAnnotation("rating", "a criterion value takes no rating: rate the target in another annotation")
	}
	if in.Comment.Set && in.Comment.Value != nil {
		return out, invalidAnnotation("comment", "a criterion value takes no comment: comment in another annotation")
	}
	if in.Value.Set {
		c := in.Criterion
		if in.Value.Value == nil {
			return out, invalidAnnotation("value", "a criterion value cannot be cleared: DELETE the annotation instead")
		}
		if c == nil {
			return out, invalidAnnotation("value", "the annotation's criterion %s is gone", a.CriterionID)
		}
		if c.Archived {
			return out, invalidAnnotation("value", "criterion %q is archived: its values are kept but not changed", c.Name)
		}
		v, err := c.CheckValue(*in.Value.Value)
		if err != nil {
			return out, err
		}
		out.Value = v
	}
	return out, nil
}

// SupersedeValues returns the removals of the author's other values of the
// same criterion on the same target once keepID carries their value: one
// reviewer has one answer per criterion per target, as with ratings.
func SupersedeValues(s State, authorID, stepID, criterionID, keepID string) PriorRatings {
	var out PriorRatings
	if authorID == "" || criterionID == "" {
		return out
	}
	for _, id := range slices.Sorted(maps.Keys(s.Annotations)) {
		a := s.Annotations[id]
		if id == keepID || a.AuthorID != authorID || a.StepID != stepID || a.CriterionID != criterionID {
			continue
		}
		out.Removals = append(out.Removals, events.AnnotationRemovedV1{AnnotationID: id, TraceID: s.ID, Reason: events.RemovedReplaced})
	}
	return out
}

// PriorRatings is what becomes of an author's earlier ratings on a target
// when they rate it again: one reviewer has one vote per trace or step, or
// training would count a reviewer twice (two +1s) or let a change of mind
// cancel out (+1 and -1). A prior rating with a comment keeps its comment
// and loses its rating (Edits); one without a comment is removed.
type PriorRatings struct {
	Edits    []events.AnnotationEditedV1
	Removals []events.AnnotationRemovedV1
}

// SupersedeRatings returns what the author's other rated annotations on the
// target (stepID "" = the whole trace) become once keepID carries their
// rating. Quoted annotations count as ratings of their step, as training
// sums them.
func SupersedeRatings(s State, authorID, stepID, keepID string) PriorRatings {
	var out PriorRatings
	if authorID == "" {
		return out
	}
	for _, id := range slices.Sorted(maps.Keys(s.Annotations)) {
		a := s.Annotations[id]
		if id == keepID || a.AuthorID != authorID || a.StepID != stepID || a.Rating == nil {
			continue
		}
		if a.Comment == nil {
			out.Removals = append(out.Removals, events.AnnotationRemovedV1{AnnotationID: id, TraceID: s.ID, Reason: events.RemovedReplaced})
			continue
		}
		out.Edits = append(out.Edits, events.AnnotationEditedV1{AnnotationID: id, TraceID: s.ID, Comment: a.Comment,
			LabelError: a.LabelError, LabelErrorNote: a.LabelErrorNote, EditorID: authorID})
	}
	return out
}

// DecideRemoveAnnotation removes a live annotation.
func DecideRemoveAnnotation(s State, annotationID string) (events.AnnotationRemovedV1, error) {
	if !s.Exists || s.Annotations[annotationID] == nil {
		return events.AnnotationRemovedV1{}, domain.NotFound("annotation", annotationID)
	}
	return events.AnnotationRemovedV1{AnnotationID: annotationID, TraceID: s.ID, Reason: events.RemovedByUser}, nil
}

// thinkingRated refuses a rating on a thinking step (metadata.thinking):
// the model's reasoning is context for the reply it precedes, not a reply
// or an action, so training would learn from a label on text the user was
// never shown. Comments on it stay allowed.
func thinkingRated(step events.StepRecord) error {
	return invalidAnnotation("rating", "step %d (%s) is thinking, the model's reasoning before its reply, not a reply or an action: it takes comments but not ratings; rate the reply or action it precedes", step.Index+1, step.ID)
}

// invalidAnnotation refuses an annotation request.
func invalidAnnotation(field, format string, args ...any) *domain.ValidationError {
	return invalid("invalid_annotation", field, format, args...)
}

// invalid refuses a request (an annotation, a worker's labels or quality
// checks) with the code of its kind.
func invalid(code, field, format string, args ...any) *domain.ValidationError {
	return &domain.ValidationError{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

func (s State) step(id string) (events.StepRecord, bool) {
	if i := slices.IndexFunc(s.Steps, func(st events.StepRecord) bool { return st.ID == id }); i >= 0 {
		return s.Steps[i], true
	}
	return events.StepRecord{}, false
}

func checkRating(r *int) error {
	if r != nil && *r != 1 && *r != -1 {
		return invalidAnnotation("rating", "rating must be 1, -1 or null")
	}
	return nil
}

// normComment treats a blank comment as no comment.
func normComment(c *string) *string {
	if c == nil || strings.TrimSpace(*c) == "" {
		return nil
	}
	return c
}
