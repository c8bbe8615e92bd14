package traces

import (
	"fmt"
	"strings"

	"github.com/criticml/critic/domain"
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
	comment := normComment(in.Comment)
	if err := checkRating(in.Rating); err != nil {
		return events.AnnotationAddedV1{}, err
	}
	if in.Rating == nil && comment == nil {
		return events.AnnotationAddedV1{}, &domain.ValidationError{Code: "invalid_annotation", Message: "an annotation needs a rating or a comment"}
	}
	if in.Quote != nil && in.StepID == "" {
		return events.AnnotationAddedV1{}, &domain.ValidationError{Code: "invalid_annotation", Field: "quote", Message: "a quote needs a step_id"}
	}
	if in.StepID != "" {
		step, ok := s.step(in.StepID)
		if !ok {
			return events.AnnotationAddedV1{}, &domain.ValidationError{Code: "invalid_annotation", Field: "step_id", Message: "step " + in.StepID + " is not a step of this trace"}
		}
		if step.Role == domain.RoleSystem && in.Rating != nil {
			return events.AnnotationAddedV1{}, &domain.ValidationError{Code: "invalid_annotation", Field: "rating", Message: "system steps are context, not agent actions: they take comments but not ratings"}
		}
		if in.Rating != nil && domain.IsThinking(step.Metadata) {
			return events.AnnotationAddedV1{}, thinkingRated(step)
		}
		if in.Quote != nil {
			if in.Quote.Text == "" {
				return events.AnnotationAddedV1{}, &domain.ValidationError{Code: "invalid_annotation", Field: "quote.text", Message: "quote text is empty"}
			}
			if !strings.Contains(step.Content, in.Quote.Prefix+in.Quote.Text+in.Quote.Suffix) {
				return events.AnnotationAddedV1{}, &domain.ValidationError{Code: "invalid_annotation", Field: "quote.text",
					Message: "the quote (with its prefix and suffix) does not occur in the step's content"}
			}
		}
	}
	return events.AnnotationAddedV1{AnnotationID: in.AnnotationID, TraceID: s.ID, StepID: in.StepID, Rating: in.Rating,
		Comment: comment, Quote: in.Quote, AuthorID: in.AuthorID, AuthorName: in.AuthorName, TraceRevision: s.Revision}, nil
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
	EditorID       string
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
		LabelError: a.LabelError, LabelErrorNote: a.LabelErrorNote, EditorID: in.EditorID}
	if in.Rating.Set {
		if err := checkRating(in.Rating.Value); err != nil {
			return out, err
		}
		out.Rating = in.Rating.Value
	}
	if in.Comment.Set {
		out.Comment = normComment(in.Comment.Value)
	}
	if in.LabelError.Set {
		out.LabelError = in.LabelError.Value != nil && *in.LabelError.Value
	}
	if in.LabelErrorNote.Set {
		out.LabelErrorNote = normComment(in.LabelErrorNote.Value)
	}
	if out.Rating == nil && out.Comment == nil {
		return out, &domain.ValidationError{Code: "invalid_annotation", Message: "an annotation needs a rating or a comment"}
	}
	if out.Rating != nil && a.StepID != "" {
		if step, ok := s.step(a.StepID); ok && step.Role == domain.RoleSystem {
			return out, &domain.ValidationError{Code: "invalid_annotation", Field: "rating", Message: "system steps take comments but not ratings"}
		} else if ok && domain.IsThinking(step.Metadata) && (a.Rating == nil || *a.Rating != *out.Rating) {
			// A rating recorded before the rule may stay as it was (an
			// edit of its comment); none is given or changed now.
			return out, thinkingRated(step)
		}
	}
	return out, nil
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
	for _, id := range sortedKeys(s.Annotations) {
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
	return &domain.ValidationError{Code: "invalid_annotation", Field: "rating",
		Message: fmt.Sprintf("step %d (%s) is thinking, the model's reasoning before its reply, not a reply or an action: it takes comments but not ratings; rate the reply or action it precedes", step.Index+1, step.ID)}
}

func (s State) step(id string) (events.StepRecord, bool) {
	for _, st := range s.Steps {
		if st.ID == id {
			return st, true
		}
	}
	return events.StepRecord{}, false
}

func checkRating(r *int) error {
	if r != nil && *r != 1 && *r != -1 {
		return &domain.ValidationError{Code: "invalid_annotation", Field: "rating", Message: "rating must be 1, -1 or null"}
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
