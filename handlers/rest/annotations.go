package rest

import (
	"encoding/json"
	"net/http"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
)

type addAnnotationRequest struct {
	// judgmentTarget's CriterionID and Value give a criterion's value
	// instead of a rating.
	judgmentTarget
	Rating  *int          `json:"rating"`
	Comment *string       `json:"comment"`
	Quote   *events.Quote `json:"quote"`
}

// judgmentTarget is what an annotation or an adjudication judges: a step
// (absent: the whole trace) and a criterion with its value (absent: a
// rating).
type judgmentTarget struct {
	StepID      *string         `json:"step_id"`
	CriterionID *string         `json:"criterion_id"`
	Value       json.RawMessage `json:"value"`
}

// target is the step id, criterion id and value, "" and nil when absent
// (a JSON null value is absent).
func (t judgmentTarget) target() (step, criterion string, value json.RawMessage) {
	if len(t.Value) > 0 && string(t.Value) != "null" {
		value = t.Value
	}
	return domain.OrEmpty(t.StepID), domain.OrEmpty(t.CriterionID), value
}

func (a *API) addAnnotation(w http.ResponseWriter, r *http.Request) error {
	var req addAnnotationRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	in := commands.AddAnnotationInput{TraceID: r.PathValue("trace_id"), Rating: req.Rating, Comment: req.Comment, Quote: req.Quote}
	in.StepID, in.CriterionID, in.Value = req.target()
	ann, err := a.d.Backend().AddAnnotation(r.Context(), edge.CallerFrom(r.Context()), in)
	return reply(w, http.StatusOK, ann, err)
}

// editAnnotation is PATCH: a field that is present is changed (null clears
// it), a field that is absent is kept (usecase.AnnotationPatchJSON).
func (a *API) editAnnotation(w http.ResponseWriter, r *http.Request) error {
	var raw map[string]json.RawMessage
	if err := a.decodeBody(w, r, &raw); err != nil {
		return err
	}
	in, err := usecase.AnnotationPatchJSON(r.PathValue("annotation_id"), raw)
	if err != nil {
		return err
	}
	ann, err := a.d.Backend().EditAnnotation(r.Context(), edge.CallerFrom(r.Context()), in)
	return reply(w, http.StatusOK, ann, err)
}

func (a *API) removeAnnotation(w http.ResponseWriter, r *http.Request) error {
	return noContent(w, a.d.Backend().RemoveAnnotation(r.Context(), edge.CallerFrom(r.Context()), r.PathValue("annotation_id")))
}
