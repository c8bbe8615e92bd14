package workerapi

import (
	"net/http"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
)

// registerGepa mounts the GEPA routes: claim, heartbeat, one call per
// evaluated candidate (recorded as gepa_run.candidate_evaluated), and the
// result or failure.
func (a *API) registerGepa(route func(string, func(*http.Request) (any, error))) {
	route(jobs.RouteClaimGepa, a.claimGepa)
	route(jobs.RouteGepaHeartbeat, a.gepaHeartbeat)
	route(jobs.RouteGepaCandidate, a.gepaCandidate)
	route(jobs.RouteGepaSucceeded, a.gepaSucceeded)
	route(jobs.RouteGepaFailed, a.gepaFailed)
	route(jobs.RouteGepaHandBack, a.gepaHandBack)
}

func (a *API) claimGepa(r *http.Request) (any, error) {
	var req jobs.GepaRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.WorkerID == "" {
		return nil, domain.Invalid("worker_id is required")
	}
	c, err := a.cmds.ClaimGepa(r.Context(), req.WorkerID, r.PathValue("run_id"), a.lease)
	a.claimed("gepa", err)
	return c, err
}

func (a *API) gepaHeartbeat(r *http.Request) (any, error) {
	var req jobs.GepaHeartbeat
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.GepaHeartbeat(r.Context(), req.WorkerID, r.PathValue("run_id"), req.Progress)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) gepaCandidate(r *http.Request) (any, error) {
	var req jobs.GepaCandidate
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.RecordGepaCandidate(r.Context(), req.WorkerID, r.PathValue("run_id"), req.Candidate)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) gepaSucceeded(r *http.Request) (any, error) {
	var req jobs.GepaSucceeded
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.SucceedGepa(r.Context(), req.WorkerID, r.PathValue("run_id"), req.Result)
	a.reported("gepa", "succeeded", err)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) gepaFailed(r *http.Request) (any, error) {
	var req jobs.GepaFailed
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.FailGepa(r.Context(), req.WorkerID, r.PathValue("run_id"), req.Error)
	a.reported("gepa", "failed", err)
	return jobs.Ack{OK: err == nil}, err
}

func (a *API) gepaHandBack(r *http.Request) (any, error) {
	var req jobs.GepaHandBack
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	_, err := a.cmds.HandBackGepa(r.Context(), req.WorkerID, r.PathValue("run_id"), req.Reason)
	a.reported("gepa", "handed_back", err)
	return jobs.Ack{OK: err == nil}, err
}
