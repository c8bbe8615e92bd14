package rest

import (
	"mime"
	"net/http"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/platform/jsonscan"
	"github.com/criticml/critic/projections/readmodel"
)

func (a *API) listFormats(w http.ResponseWriter, r *http.Request) error {
	edge.WriteJSON(w, http.StatusOK, usecase.Formats())
	return nil
}

type importRequest struct {
	Format   *string `json:"format"`
	Data     *string `json:"data"`
	SourceID *string `json:"source_id"`
	// Contribute is every imported trace's consent to train the shared
	// evaluator (absent: unchanged). The fast decoder does not know it, so
	// a body with it takes the strict path.
	Contribute *bool `json:"contribute"`
}

// decodeImportRequest reads the common import body, {"format": "...",
// "data": "...", "source_id": "..."} with exact keys, faster than encoding/json
// (the data string is the whole upload, megabytes of escaped JSONL), on the
// platform/jsonscan fast path. It reports false for anything else, and
// decodeBody's strict decoding then accepts or rejects the body with its
// usual errors; whatever this accepts, that decodes to the same request.
func decodeImportRequest(b []byte, req *importRequest) bool {
	s := jsonscan.New(b)
	ok := s.Object(func(k []byte) bool {
		var field **string
		switch string(k) {
		case "format":
			field = &req.Format
		case "data":
			field = &req.Data
		case "source_id":
			field = &req.SourceID
		default:
			return false
		}
		if s.Null() {
			*field = nil
			return true
		}
		var v string
		if s.Peek() != '"' || !s.Str(&v) {
			return false
		}
		*field = &v
		return true
	})
	return ok && s.End()
}

// rawImport reports whether an import's body is the payload itself
// (Content-Type application/x-ndjson, application/jsonl or
// application/x-jsonlines) rather than the {format, data} envelope.
func rawImport(r *http.Request) bool {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return ct == "application/x-ndjson" || ct == "application/jsonl" || ct == "application/x-jsonlines"
}

type importResponse struct {
	Format   string   `json:"format"`
	Imported int      `json:"imported"`
	TraceIDs []string `json:"trace_ids"`
	// Unchanged is how many of trace_ids the payload left as they were
	// (beyond spec 001's shape, additive: `critic import` reports it).
	Unchanged int `json:"unchanged"`
	// AnnotationsRemoved counts the step annotations removed because their
	// steps changed (additive too): a re-import says what it cost the review.
	AnnotationsRemoved int `json:"annotations_removed"`
	// Erased are the ids of the payload's traces that were erased before:
	// left out (an erased trace is not stored again), the rest imported.
	Erased []string `json:"erased"`
}

func (a *API) importTraces(w http.ResponseWriter, r *http.Request) error {
	return a.importWith(w, r, "", nil)
}

// sessionFormats are what POST /api/v1/me/transcripts accepts.
var sessionFormats = map[string]bool{"claude_code": true, "codex": true}

// uploadTranscript is POST /api/v1/me/transcripts, the native upload path of
// agent session recorders (spec 001's top section): a Claude Code or Codex
// session transcript, `format` optional (detected), synced into Traces — a
// grown snapshot appends, an equal or older one is a no-op, a divergent one
// is 409 trace_sync_error.
func (a *API) uploadTranscript(w http.ResponseWriter, r *http.Request) error {
	return a.importWith(w, r, "auto", func(format string, data []byte) (string, error) {
		if format == "auto" {
			ad, err := formats.DetectFormat(data)
			if err != nil {
				return "", err
			}
			format = ad.Name()
		}
		if !sessionFormats[format] {
			return "", &domain.ValidationError{Code: "unsupported_transcript", Field: "format",
				Message: "this endpoint takes Claude Code and Codex session transcripts (got " + format + "); import other formats with POST /api/v1/rm/traces/import"}
		}
		return format, nil
	})
}

// importWith runs an import request; defaultFormat applies when the body
// names none, and restrict (when set) may refuse or resolve the format.
func (a *API) importWith(w http.ResponseWriter, r *http.Request, defaultFormat string, restrict func(format string, data []byte) (string, error)) error {
	var req importRequest
	var data []byte
	raw := rawImport(r)
	if raw {
		// The body is the payload itself: read once, within the limit,
		// straight into the parser's input — no JSON envelope to decode
		// and no string copies of a 64 MiB upload.
		q := r.URL.Query()
		for k := range q {
			if k != "format" && k != "source_id" && k != "contribute" {
				return &domain.ValidationError{Code: "unknown_field", Field: k, Message: "unknown query parameter " + k + " (a raw JSONL import takes ?format=, ?source_id= and ?contribute=)"}
			}
		}
		if q.Has("format") {
			req.Format = new(q.Get("format"))
		}
		if q.Has("source_id") {
			req.SourceID = new(q.Get("source_id"))
		}
		if q.Has("contribute") {
			switch q.Get("contribute") {
			case "true":
				req.Contribute = new(true)
			case "false":
				req.Contribute = new(false)
			default:
				return domain.InvalidField("contribute", "contribute must be true or false")
			}
		}
	}
	body, err := a.readBody(w, r)
	if err != nil {
		return err
	}
	if raw {
		data = body
	} else {
		// The fast decoder, like encoding/json, would turn invalid UTF-8
		// into U+FFFD: the edge's text rule reads the bytes first.
		if err := domain.CheckJSON("", body); err != nil {
			return err
		}
		if !decodeImportRequest(body, &req) {
			req = importRequest{}
			if err := decodeBodyBytes(body, &req); err != nil {
				return err
			}
		}
		if req.Data != nil {
			data = []byte(*req.Data)
		}
	}
	if req.Format == nil && defaultFormat != "" {
		req.Format = &defaultFormat
	}
	if req.Format == nil {
		return domain.InvalidField("format", "format is required")
	}
	if data == nil && !raw {
		return domain.InvalidField("data", "data is required")
	}
	in := commands.ImportTracesInput{Format: *req.Format, Data: data, Contribute: req.Contribute}
	if restrict != nil {
		if in.Format, err = restrict(in.Format, in.Data); err != nil {
			return err
		}
	}
	res, err := a.d.Backend().ImportTraces(r.Context(), edge.CallerFrom(r.Context()), in, req.SourceID)
	if err != nil {
		return err
	}
	edge.WriteJSON(w, http.StatusOK, importResponse{Format: res.Format, Imported: len(res.TraceIDs), TraceIDs: append([]string{}, res.TraceIDs...), Unchanged: res.Unchanged, AnnotationsRemoved: res.AnnotationsRemoved,
		Erased: append([]string{}, res.Erased...)})
	return nil
}

type listResponse struct {
	Traces []readmodel.TraceSummary `json:"traces"`
	Total  int                      `json:"total"`
}

// listTraces reads ?limit&offset (default 50/0, limit ≤ 1000), ?q (text
// in a title or step), ?sort (source, -source, or a score column ascending
// or with "-" descending: action_credit, scored_actions, trace_score,
// outcome, latest_score), ?outcome (repeatable or a comma list), the
// inclusive score bounds ?action_credit_min/_max, ?trace_score_min/_max,
// ?latest_score_min/_max, ?source_id, and the inclusive import-date range ?from=YYYY-MM-DD&to=YYYY-MM-DD
// interpreted in ?tz (an IANA zone, default UTC) — the user's local calendar.
// ?member (listTraces: memberParam) keeps the traces that member annotated.
// The rules are shared with the Connect API (usecase.ListParams).
func (a *API) listTraces(w http.ResponseWriter, r *http.Request) error {
	p, err := usecase.ListParamsFromQuery(r.URL.Query())
	if err != nil {
		return err
	}
	f, err := p.Filter()
	if err != nil {
		return err
	}
	if f.Member, err = a.memberParam(r); err != nil {
		return err
	}
	traces, total, err := a.d.Queries.ListTraces(r.Context(), edge.CallerFrom(r.Context()).UserID, f)
	return reply(w, http.StatusOK, listResponse{Traces: traces, Total: total}, err)
}

func (a *API) getTrace(w http.ResponseWriter, r *http.Request) error {
	d, err := a.d.Queries.GetTrace(r.Context(), edge.CallerFrom(r.Context()).UserID, r.PathValue("trace_id"))
	return reply(w, http.StatusOK, d, err)
}

func (a *API) deleteTrace(w http.ResponseWriter, r *http.Request) error {
	return noContent(w, a.d.Backend().DeleteTrace(r.Context(), edge.CallerFrom(r.Context()), r.PathValue("trace_id")))
}

// retryLabeling is POST /traces/{id}/labeling/retry: 202 with the trace's
// labeling status; 404 unowned trace, 409 when nothing is left to label or
// the trace carries its own labels, 503 without a step-label model.
func (a *API) retryLabeling(w http.ResponseWriter, r *http.Request) error {
	st, err := a.d.Backend().RetryLabeling(r.Context(), edge.CallerFrom(r.Context()), r.PathValue("trace_id"))
	return reply(w, http.StatusAccepted, st, err)
}

// rescoreWithEvaluator is POST /traces/{id}/evaluator/rescore, "Score
// again" (spec 002): 202 with the trace's evaluator block (status scoring);
// 404 unowned trace, 409 while no shared evaluator release is live.
func (a *API) rescoreWithEvaluator(w http.ResponseWriter, r *http.Request) error {
	ev, err := a.d.Backend().RescoreWithEvaluator(r.Context(), edge.CallerFrom(r.Context()), r.PathValue("trace_id"))
	return reply(w, http.StatusAccepted, ev, err)
}

// rescoreLabels is POST /traces/{id}/labeling/rescore, the viewer's rescore
// control: every chunk is labeled anew and so scored anew. 202 with the
// labeling status; 404 unowned trace, 409 when the trace carries its own
// labels or the agent has not responded, 503 without a step-label model.
func (a *API) rescoreLabels(w http.ResponseWriter, r *http.Request) error {
	st, err := a.d.Backend().RelabelTrace(r.Context(), edge.CallerFrom(r.Context()), r.PathValue("trace_id"))
	return reply(w, http.StatusAccepted, st, err)
}
