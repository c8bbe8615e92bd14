package rest

import (
	"net/http"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers"
	"github.com/criticml/critic/projections/readmodel"
)

func (a *API) listFormats(w http.ResponseWriter, r *http.Request) error {
	handlers.WriteJSON(w, http.StatusOK, handlers.Formats())
	return nil
}

type importRequest struct {
	Format   *string `json:"format"`
	Data     *string `json:"data"`
	SourceID *string `json:"source_id"`
}

type importResponse struct {
	Format   string   `json:"format"`
	Imported int      `json:"imported"`
	TraceIDs []string `json:"trace_ids"`
}

func (a *API) importTraces(w http.ResponseWriter, r *http.Request) error {
	caller := handlers.CallerFrom(r.Context())
	if err := handlers.RequireWrite(caller); err != nil {
		return err
	}
	var req importRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.Format == nil {
		return &domain.ValidationError{Code: "invalid_request", Field: "format", Message: "format is required"}
	}
	if req.Data == nil {
		return &domain.ValidationError{Code: "invalid_request", Field: "data", Message: "data is required"}
	}
	in := commands.ImportTraces{Format: *req.Format, Data: []byte(*req.Data)}
	if req.SourceID != nil {
		if *req.SourceID == "" {
			return &domain.ValidationError{Code: "invalid_request", Field: "source_id", Message: "source_id must be 1–200 characters"}
		}
		in.SourceID = *req.SourceID
	}
	res, err := a.cmds.ImportTraces(r.Context(), handlers.Actor(caller), in)
	if err != nil {
		return err
	}
	if err := a.settle(r.Context(), res.Result); err != nil {
		return err
	}
	handlers.WriteJSON(w, http.StatusOK, importResponse{Format: res.Format, Imported: len(res.TraceIDs), TraceIDs: res.TraceIDs})
	return nil
}

type listResponse struct {
	Traces []readmodel.TraceSummary `json:"traces"`
	Total  int                      `json:"total"`
}

func (a *API) listTraces(w http.ResponseWriter, r *http.Request) error {
	f, err := parseListFilter(r)
	if err != nil {
		return err
	}
	traces, total, err := a.queries.ListTraces(r.Context(), handlers.CallerFrom(r.Context()).UserID, f)
	if err != nil {
		return err
	}
	handlers.WriteJSON(w, http.StatusOK, listResponse{Traces: traces, Total: total})
	return nil
}

// parseListFilter reads ?limit&offset (default 50/0, limit ≤ 1000),
// ?source_id, and the inclusive import-date range ?from=YYYY-MM-DD&to=YYYY-MM-DD
// interpreted in ?tz (an IANA zone, default UTC) — the user's local calendar.
// The rules are shared with the Connect API (handlers.ListParams).
func parseListFilter(r *http.Request) (readmodel.ListFilter, error) {
	p, err := handlers.ListParamsFromQuery(r.URL.Query())
	if err != nil {
		return readmodel.ListFilter{}, err
	}
	return p.Filter()
}

func (a *API) getTrace(w http.ResponseWriter, r *http.Request) error {
	d, err := a.queries.GetTrace(r.Context(), handlers.CallerFrom(r.Context()).UserID, r.PathValue("trace_id"))
	if err != nil {
		return err
	}
	handlers.WriteJSON(w, http.StatusOK, d)
	return nil
}

func (a *API) deleteTrace(w http.ResponseWriter, r *http.Request) error {
	caller := handlers.CallerFrom(r.Context())
	if err := handlers.RequireWrite(caller); err != nil {
		return err
	}
	res, err := a.cmds.DeleteTrace(r.Context(), handlers.Actor(caller), r.PathValue("trace_id"))
	if err != nil {
		return err
	}
	if err := a.settle(r.Context(), res); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
