package rest

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/handlers"
)

type addAnnotationRequest struct {
	StepID  *string       `json:"step_id"`
	Rating  *int          `json:"rating"`
	Comment *string       `json:"comment"`
	Quote   *events.Quote `json:"quote"`
}

func (a *API) addAnnotation(w http.ResponseWriter, r *http.Request) error {
	caller := handlers.CallerFrom(r.Context())
	if err := handlers.RequireWrite(caller); err != nil {
		return err
	}
	var req addAnnotationRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	in := commands.AddAnnotation{TraceID: r.PathValue("trace_id"), Rating: req.Rating, Comment: req.Comment, Quote: req.Quote, AuthorName: caller.Name}
	if req.StepID != nil {
		in.StepID = *req.StepID
	}
	res, err := a.cmds.AddAnnotation(r.Context(), handlers.Actor(caller), in)
	if err != nil {
		return err
	}
	return a.respondAnnotation(w, r, res.Result, res.AnnotationID)
}

func (a *API) respondAnnotation(w http.ResponseWriter, r *http.Request, res commands.Result, id string) error {
	if err := a.settle(r.Context(), res); err != nil {
		return err
	}
	ann, err := a.queries.GetAnnotation(r.Context(), handlers.CallerFrom(r.Context()).UserID, id)
	if err != nil {
		return err
	}
	handlers.WriteJSON(w, http.StatusOK, ann)
	return nil
}

// editAnnotation is PATCH: a field that is present is changed (null clears
// it), a field that is absent is kept.
func (a *API) editAnnotation(w http.ResponseWriter, r *http.Request) error {
	caller := handlers.CallerFrom(r.Context())
	if err := handlers.RequireWrite(caller); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := a.decodeBody(w, r, &raw); err != nil {
		return err
	}
	id := r.PathValue("annotation_id")
	in := traces.EditAnnotationInput{AnnotationID: id}
	var unknown []string
	for k, v := range raw {
		var err error
		switch k {
		case "rating":
			err = setOptional(v, &in.Rating)
		case "comment":
			err = setOptional(v, &in.Comment)
		case "label_error":
			err = setOptional(v, &in.LabelError)
		case "label_error_note":
			err = setOptional(v, &in.LabelErrorNote)
		default:
			unknown = append(unknown, k)
			continue
		}
		if err != nil {
			return &domain.ValidationError{Code: "invalid_request", Field: k, Message: k + " has the wrong type"}
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return &domain.ValidationError{Code: "unknown_field", Field: unknown[0], Message: "unknown field " + strings.Join(unknown, ", ")}
	}
	traceID, err := a.queries.AnnotationTrace(r.Context(), caller.UserID, id)
	if err != nil {
		return err
	}
	res, err := a.cmds.EditAnnotation(r.Context(), handlers.Actor(caller), traceID, in)
	if err != nil {
		return err
	}
	return a.respondAnnotation(w, r, res, id)
}

func setOptional[T any](raw json.RawMessage, dst *traces.Optional[T]) error {
	dst.Set = true
	if string(raw) == "null" {
		return nil
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	dst.Value = &v
	return nil
}

func (a *API) removeAnnotation(w http.ResponseWriter, r *http.Request) error {
	caller := handlers.CallerFrom(r.Context())
	if err := handlers.RequireWrite(caller); err != nil {
		return err
	}
	id := r.PathValue("annotation_id")
	traceID, err := a.queries.AnnotationTrace(r.Context(), caller.UserID, id)
	if err != nil {
		return err
	}
	res, err := a.cmds.RemoveAnnotation(r.Context(), handlers.Actor(caller), traceID, id)
	if err != nil {
		return err
	}
	if err := a.settle(r.Context(), res); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
