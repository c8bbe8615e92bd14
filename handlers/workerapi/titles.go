package workerapi

import (
	"net/http"

	"github.com/criticml/critic/domain/events"
)

// The title routes: a title worker fetches a trace's bounded excerpt and
// reports the fast model's title, which becomes trace.titled.

func (a *API) titleSource(r *http.Request) (any, error) {
	var req struct {
		WorkerID string `json:"worker_id"`
		Revision int    `json:"revision"`
	}
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	s, err := a.cmds.TitleSourceOf(r.Context(), r.PathValue("trace_id"), req.Revision)
	if err != nil {
		return nil, err
	}
	return map[string]any{"trace_id": s.TraceID, "revision": s.Revision, "input": s.Input, "needed": s.Needed}, nil
}

func (a *API) recordTitle(r *http.Request) (any, error) {
	var req struct {
		WorkerID string            `json:"worker_id"`
		Revision int               `json:"revision"`
		Title    string            `json:"title"`
		Model    string            `json:"model"`
		Usage    []events.LLMUsage `json:"usage"`
	}
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	res, err := a.cmds.RecordTitle(r.Context(), req.WorkerID, r.PathValue("trace_id"), req.Revision, req.Title, req.Model, req.Usage)
	return map[string]bool{"recorded": err == nil && res.LastEventID != ""}, err
}
