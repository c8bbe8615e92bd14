package workerapi

import (
	"net/http"

	"github.com/criticml/critic/domain/jobs"
)

// The title routes: a title worker fetches a trace's bounded excerpt and
// reports the fast model's title, which becomes trace.titled.

func (a *API) titleSource(r *http.Request) (any, error) {
	var req jobs.TitleSourceRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	s, err := a.cmds.TitleSourceOf(r.Context(), r.PathValue("trace_id"), req.Revision)
	if err != nil {
		return nil, err
	}
	return jobs.TitleSource{TraceID: s.TraceID, Revision: s.Revision, Input: s.Input, Needed: s.Needed}, nil
}

func (a *API) recordTitle(r *http.Request) (any, error) {
	var req jobs.TitleReport
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	res, err := a.cmds.RecordTitle(r.Context(), req.WorkerID, r.PathValue("trace_id"), req.Revision, req.Title, req.Model, req.Usage)
	return jobs.TitleRecorded{Recorded: err == nil && res.LastEventID != ""}, err
}
