package rest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/handlers"
	"github.com/criticml/critic/projections/readmodel"
)

type formatInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

func (a *API) listFormats(w http.ResponseWriter, r *http.Request) error {
	out := []formatInfo{}
	for _, f := range formats.All() {
		out = append(out, formatInfo{f.Name(), f.Description()})
	}
	out = append(out, formatInfo{formats.Auto{}.Name(), formats.Auto{}.Description()})
	handlers.WriteJSON(w, http.StatusOK, out)
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
func parseListFilter(r *http.Request) (readmodel.ListFilter, error) {
	q := r.URL.Query()
	f := readmodel.ListFilter{Limit: 50, SourceID: q.Get("source_id")}
	intParam := func(name string, dst *int, lo, hi int) error {
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < lo || n > hi {
				return &domain.ValidationError{Code: "invalid_request", Field: name, Message: name + " must be an integer from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi)}
			}
			*dst = n
		}
		return nil
	}
	if err := intParam("limit", &f.Limit, 1, 1000); err != nil {
		return f, err
	}
	if err := intParam("offset", &f.Offset, 0, 1<<31-1); err != nil {
		return f, err
	}
	loc := time.UTC
	if tz := q.Get("tz"); tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return f, &domain.ValidationError{Code: "invalid_request", Field: "tz", Message: "unknown time zone " + strconv.Quote(tz)}
		}
		loc = l
	}
	for _, p := range []struct {
		name string
		dst  **time.Time
		next bool
	}{{"from", &f.From, false}, {"to", &f.To, true}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		d, err := time.ParseInLocation("2006-01-02", v, loc)
		if err != nil {
			return f, &domain.ValidationError{Code: "invalid_request", Field: p.name, Message: p.name + " must be a date YYYY-MM-DD"}
		}
		if p.next { // inclusive: everything before the next day's start
			d = d.AddDate(0, 0, 1)
		}
		*p.dst = &d
	}
	return f, nil
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

func (a *API) exportTraces(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="traces.jsonl"`)
	return a.queries.ExportTraces(r.Context(), handlers.CallerFrom(r.Context()).UserID, w)
}
